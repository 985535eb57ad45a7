import type { MessageLedger } from '../checks/messages';
import type { SimContext } from '../context';
import type { HttpReply } from '../http';
import { SimRandom } from '../rng';
import { Agent, type Current } from './agent';

/** How long before the lease's end, on its own clock, a worker that works to its lease finishes. */
const finishMarginMs = 500;

/** Long-poll waits stay under the client's 2 s timeout, so a wait that runs out is an answer, not a retry. */
const maxWaitMs = 1_500;

/**
 * A worker draining the run's mailboxes: recv with a long poll (holder = its name,
 * holderSession = its current session, a lease of 5 to 10 s), work for a while, then complete
 * or nack (retry or not). Some jobs are slow: the lease runs out mid-work, so the complete must
 * answer 409 LEASE_LOST. A crash (between the steps) abandons the lease; the sweep returns it.
 * With clock skew, some jobs work until the agent's own clock says the lease in
 * `leaseExpiresAt` is nearly out: a clock behind the server's finishes after the lease ended
 * there, and must be told LEASE_LOST (the ledger says a 200 after the lease is a violation).
 */
export class MessageWorker extends Agent {
  private counter = 0;
  /** Its own stream, so that skew-free runs draw exactly what they drew before. */
  private readonly skewRng = new SimRandom(`${this.rng.seed}/skewed-finishes`);

  constructor(
    name: string,
    sim: SimContext,
    private readonly ledger: MessageLedger,
    /** How often a job overruns its lease. */
    private readonly slowness: number,
  ) {
    super(name, sim);
  }

  protected async run(current: Current): Promise<void> {
    while (this.sim.phase === 'safety') {
      await this.work(current);
      await this.sleep(current, this.rng.int(10, 300));
    }
  }

  private key(kind: string): string {
    return `${this.name}.${this.session}.${kind}${this.counter++}`;
  }

  private async work(current: Current): Promise<void> {
    const mailboxId = this.rng.pick(this.sim.mailboxIds);
    const leaseSeconds = this.rng.int(5, 10);
    const body = { scopeId: this.sim.messageScopeId, holder: this.name, holderSession: this.sessionName, leaseSeconds, waitMs: this.rng.int(200, maxWaitMs) };
    const reply = await this.call(current, 'POST', `/mailboxes/${mailboxId}/recv`, { body, idempotencyKey: this.key('r') });
    if (reply.statusCode === 204) return;
    if (!this.expect(reply, 200, 'recv')) return;
    const { messageId, token } = reply.body as { messageId: string; token: string };
    const leaseExpiresAtMs = Date.parse(reply.body.leaseExpiresAt);
    this.ledger.delivered({ messageId, token, session: this.sessionName, claimAtMs: leaseExpiresAtMs - leaseSeconds * 1_000, leaseExpiresAtMs, attempt: reply.body.attempt });
    await this.crashPoint(current);
    const slow = this.rng.chance(this.slowness);
    const workMs = slow ? leaseSeconds * 1_000 + this.rng.int(100, 3_000) : this.rng.int(20, 2_000);
    await this.sleep(current, this.worksToItsClock() ? Math.max(0, leaseExpiresAtMs - finishMarginMs - this.clockNow()) : workMs);
    await this.crashPoint(current);
    const roll = this.rng.float();
    if (roll < 0.75) await this.finish(current, messageId, token, 'complete', { token, result: { payload: { by: this.name } } });
    else await this.finish(current, messageId, token, 'nack', { token, retry: roll < 0.92 });
  }

  private worksToItsClock(): boolean {
    return this.clockSkewMs !== 0 && this.skewRng.chance(0.3);
  }

  private async finish(current: Current, messageId: string, token: string, what: 'complete' | 'nack', body: unknown): Promise<void> {
    const sentAtMs = this.sim.scheduler.now();
    const reply = await this.call(current, 'POST', `/messages/${messageId}/${what}`, { body, idempotencyKey: this.key(what[0]!) });
    const heardAtMs = this.sim.scheduler.now();
    if (reply.statusCode === 409 && reply.body.error.code === 'LEASE_LOST') return this.ledger.leaseLost(token, heardAtMs, what);
    if (!this.expect(reply, 200, what)) return;
    this.ledger.accepted(token, sentAtMs, heardAtMs, what === 'complete');
  }

  private expect(reply: HttpReply, status: number, what: string): boolean {
    if (reply.statusCode === status) return true;
    this.sim.ledger.violation(`${this.name}: ${what} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
    return false;
  }
}
