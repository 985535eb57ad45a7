import type { Attempt, AttemptKind } from '../checks/limits';
import type { SimContext } from '../context';
import { NetworkError, type Network } from '../network';
import type { HttpReply } from '../http';
import { SimRandom } from '../rng';
import { Agent, type Current } from './agent';

export interface LimitedTenant {
  spaceId: string;
  key: string;
  mailboxId: string;
  scopeId: string;
}

/**
 * An agent of the limited tenant (a Free organization with a small space rate and few operations
 * left this month): sends, claims and completes, reads, and makes recovery calls far faster than
 * its limits allow. Each attempt is sent once, never retried, and recorded with what it was told,
 * so the checker knows every request the server may have counted.
 *
 * It may crash once a reply came back, before it recorded it (the checker then knows the
 * attempt as one whose reply was lost), or between a claim and its complete. It writes down each
 * delivery it claims before working on it; the next session completes that first (or hears
 * LEASE_LOST), and the sessions' attempts all stand in the one record the limits are checked on.
 */
export class LimitsAgent extends Agent {
  private counter = 0;
  /** Survives a crash: the delivery it persisted once claimed, until its complete was sent. */
  private claimed: { messageId: string; token: string } | undefined;
  /** Its own stream for crashes, so that crash-free runs draw exactly what they drew before. */
  private readonly crashRng = new SimRandom(`${this.rng.seed}/crashes`);

  constructor(
    name: string,
    sim: SimContext,
    private readonly tenant: LimitedTenant,
    private readonly attempts: Attempt[],
    /** Its own network (own random stream), so the limited tenant leaves the other agents' draws alone. */
    private readonly network: Network,
    /** Attempts per agent: enough to pass the rate and the month several times over, few enough to leave the run's steps to the others. */
    private readonly budget: number,
  ) {
    super(name, sim);
  }

  protected async run(current: Current): Promise<void> {
    if (this.claimed) await this.complete(current, this.claimed);
    while (this.sim.phase === 'safety' && this.counter < this.budget) {
      const roll = this.rng.float();
      if (roll < 0.35) await this.send(current, 'work', 'send', 'POST', `/mailboxes/${this.tenant.mailboxId}/messages`, { scopeId: this.tenant.scopeId, payload: this.counter });
      else if (roll < 0.55) await this.claimAndComplete(current);
      else if (roll < 0.7) await this.send(current, 'read', 'read limits', 'GET', '/limits');
      else await this.send(current, 'recovery', 'waiter cancel', 'POST', `/allowance-waiters/${this.rng.uuid()}/cancel`);
      await this.sleep(current, this.rng.int(0, 200));
    }
  }

  private async claimAndComplete(current: Current): Promise<void> {
    const claimed = await this.send(current, 'work', 'recv', 'POST', `/mailboxes/${this.tenant.mailboxId}/recv`, { scopeId: this.tenant.scopeId, holder: this.name, holderSession: 's' });
    if (claimed?.statusCode !== 200) return;
    this.claimed = { messageId: claimed.body.messageId, token: claimed.body.token };
    await this.crashPoint(current, this.crashRng);
    await this.complete(current, this.claimed);
  }

  private async complete(current: Current, delivery: { messageId: string; token: string }): Promise<void> {
    this.claimed = undefined;
    await this.send(current, 'recovery', 'complete', 'POST', `/messages/${delivery.messageId}/complete`, { token: delivery.token });
  }

  private async send(current: Current, kind: AttemptKind, what: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<HttpReply | undefined> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.tenant.key}` };
    if (method === 'POST') headers['idempotency-key'] = `${this.name}.${this.counter}`;
    this.counter++;
    const attempt: Attempt = { agent: this.name, kind, what, sentAtMs: this.sim.scheduler.now() };
    this.attempts.push(attempt);
    let reply: HttpReply | undefined;
    try {
      reply = await this.network.send(this.name, { method, path: `/v1/spaces/${this.tenant.spaceId}${path}`, headers, body });
    } catch (error) {
      if (!(error instanceof NetworkError)) throw error;
    }
    if (!current()) await new Promise<never>(() => undefined);
    if (!reply) return undefined;
    // A crash here, the reply heard but not recorded, leaves the attempt as one whose reply was lost.
    await this.crashPoint(current, this.crashRng);
    Object.assign(attempt, { repliedAtMs: this.sim.scheduler.now(), statusCode: reply.statusCode, code: reply.body?.error?.code, replayed: reply.headers['idempotent-replayed'] === 'true' });
    if (reply.statusCode >= 500) this.sim.ledger.violation(`${this.name}: ${method} ${path} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
    if (reply.statusCode === 429 && !reply.headers['retry-after']) this.sim.ledger.violation(`${this.name}: a 429 ${reply.body?.error?.code} without Retry-After`);
    return reply;
  }
}
