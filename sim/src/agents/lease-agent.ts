import type { SimContext } from '../context';
import { NetworkError, type Network } from '../network';
import type { HttpReply } from '../http';
import { Agent, type Current } from './agent';

export interface CrowdedTenant {
  spaceId: string;
  key: string;
  mailboxId: string;
  scopeId: string;
  /** The pool a third of its tasks need units of. */
  pool: string;
}

/** The longest lease the lease agents ask for: what the agents-at-once check allows a restarted server's unsynced leases to live. */
export const maxLeaseSeconds = 10;

/**
 * An agent of the crowded tenant (a Free organization, 10 agents at once, rate and month to
 * spare): submits tasks by submit-batch, a third of them needing 1 to 3 pool units, and claims
 * them by admit-batch, recv-batch, admit and recv, asking for up to three times what its plan lets
 * the organization hold at once (docs/design/0015-batches.md, docs/design/0016-limits-and-retry-after.md: every delivery and pool unit a batch hands out
 * is a lease). It keeps what it got 0 to 3 s, then completes it in one complete-batch, or now and
 * then leaves it to run out. Each call is sent once, never retried; the other lease agents do the
 * same at the same time, so batches meet at the limit.
 */
export class LeaseAgent extends Agent {
  private counter = 0;

  constructor(
    name: string,
    sim: SimContext,
    private readonly tenant: CrowdedTenant,
    private readonly network: Network,
    /** When each of the tenant's calls came back: the check's restart exemption needs them. */
    private readonly replies: number[],
    private readonly budget: number,
  ) {
    super(name, sim);
  }

  protected async run(current: Current): Promise<void> {
    while (this.sim.phase === 'safety' && this.counter < this.budget) {
      const roll = this.rng.float();
      if (roll < 0.3) await this.submitMany(current);
      else if (roll < 0.6) await this.claim(current, '/tasks/admit-batch', { mailboxId: this.tenant.mailboxId, maxTasks: this.rng.int(1, 30) });
      else if (roll < 0.8) await this.claim(current, `/mailboxes/${this.tenant.mailboxId}/recv-batch`, { maxMessages: this.rng.int(1, 30) });
      else if (roll < 0.9) await this.claim(current, '/tasks/admit', { mailboxId: this.tenant.mailboxId });
      else await this.claim(current, `/mailboxes/${this.tenant.mailboxId}/recv`, {});
      await this.sleep(current, this.rng.int(0, 300));
    }
  }

  private async submitMany(current: Current): Promise<void> {
    const tasks = Array.from({ length: this.rng.int(3, 12) }, (_, i) => ({
      scopeId: this.tenant.scopeId,
      mailboxId: this.tenant.mailboxId,
      taskKey: `${this.name}.${this.counter}.${i}`,
      ...(this.rng.chance(1 / 3) ? { requirements: { pools: [{ name: this.tenant.pool, units: this.rng.int(1, 3) }] } } : {}),
    }));
    await this.send(current, '/tasks/submit-batch', { tasks });
  }

  /** One claim call; what it claimed is held a while, then completed in one batch or left to run out. */
  private async claim(current: Current, path: string, extra: Record<string, unknown>): Promise<void> {
    const body = { scopeId: this.tenant.scopeId, holder: this.name, holderSession: 's', leaseSeconds: this.rng.int(5, maxLeaseSeconds), ...extra };
    const reply = await this.send(current, path, body);
    if (reply?.statusCode !== 200) return;
    const claimed = (reply.body.items ?? [reply.body]) as { messageId: string; token: string }[];
    await this.sleep(current, this.rng.int(0, 3_000));
    if (this.rng.chance(0.2)) return;
    await this.send(current, '/messages/complete-batch', { items: claimed.map((d) => ({ messageId: d.messageId, token: d.token })) });
  }

  private async send(current: Current, path: string, body: unknown): Promise<HttpReply | undefined> {
    const headers = { authorization: `Bearer ${this.tenant.key}`, 'idempotency-key': `${this.name}.${this.counter++}` };
    let reply: HttpReply | undefined;
    try {
      reply = await this.network.send(this.name, { method: 'POST', path: `/v1/spaces/${this.tenant.spaceId}${path}`, headers, body });
    } catch (error) {
      if (!(error instanceof NetworkError)) throw error;
    }
    if (!current()) await new Promise<never>(() => undefined);
    if (!reply) return undefined;
    this.replies.push(this.sim.scheduler.now());
    if (reply.statusCode >= 500) this.sim.ledger.violation(`${this.name}: POST ${path} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
    if (reply.statusCode === 429 && !reply.headers['retry-after']) this.sim.ledger.violation(`${this.name}: a 429 ${reply.body?.error?.code} without Retry-After`);
    return reply;
  }
}
