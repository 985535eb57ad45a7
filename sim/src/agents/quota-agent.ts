import { SimRandom } from '../rng';
import { Agent, type Current } from './agent';

/**
 * A worker sharing provider quotas: consumes when it can, otherwise joins the line and waits
 * for its grant (long-polling the waiter), sometimes gives up and cancels, and now and then
 * reports a provider cooldown. Every call carries an Idempotency-Key, so retries are safe.
 */
export class QuotaAgent extends Agent {
  private counter = 0;
  /**
   * Whether a wait asks for a whole window's units, from a stream of its own (the agent's other
   * draws stay as they were). Such a waiter at the head blocks the line until a window starts
   * empty, and the smaller waiters behind it must wait too (strict FIFO): the line's hardest case.
   */
  private readonly wholeWindow = new SimRandom(`${this.rng.seed}/whole-window`);
  /**
   * Whether a wait is watched to its end on the agent's own clock, from a stream of its own: the
   * agent polls until its clock says the waiter's expiresAt has passed, then gives up and
   * cancels what it last saw WAITING. A clock ahead of the server's cancels early (200 CANCELLED,
   * or 409 when a grant came first); one behind polls on past the server's expiry and sees the
   * waiter end. Either way the journal's allowance checks replay the line.
   */
  private readonly watchToExpiry = new SimRandom(`${this.rng.seed}/watch-to-expiry`);

  protected async run(current: Current): Promise<void> {
    while (this.sim.phase === 'safety') {
      const allowanceId = this.rng.pick(this.sim.allowanceIds);
      const roll = this.rng.float();
      if (roll < 0.1) await this.cooldown(current, allowanceId);
      else if (roll < 0.55) await this.consume(current, allowanceId);
      else await this.waitForGrant(current, allowanceId);
      await this.sleep(current, this.rng.int(10, 800));
    }
  }

  private key(kind: string): string {
    return `${this.name}.${this.session}.${kind}${this.counter++}`;
  }

  private units(): number {
    return this.rng.int(1, 6);
  }

  private async consume(current: Current, allowanceId: string): Promise<void> {
    const workKey = this.rng.chance(0.5) ? this.key('w') : undefined;
    const body = { scopeId: this.rng.uuid(), units: this.units(), holder: this.name, ...(workKey ? { workKey } : {}) };
    await this.call(current, 'POST', `/allowances/${allowanceId}/consume`, { body, idempotencyKey: this.key('c') });
  }

  private async cooldown(current: Current, allowanceId: string): Promise<void> {
    await this.call(current, 'POST', `/allowances/${allowanceId}/cooldown`, { body: { seconds: this.rng.int(1, 5), reason: 'provider 429' }, idempotencyKey: this.key('cd') });
  }

  private async waitForGrant(current: Current, allowanceId: string): Promise<void> {
    const drawn = this.units();
    const units = this.wholeWindow.chance(0.2) ? (this.sim.allowanceUnitsLimits.get(allowanceId) ?? drawn) : drawn;
    const body = { scopeId: this.rng.uuid(), units, holder: this.name, ttlSeconds: this.rng.int(5, 30) };
    const joined = await this.call(current, 'POST', `/allowances/${allowanceId}/wait`, { body, idempotencyKey: this.key('j') });
    if (joined.statusCode !== 201) return;
    await this.crashPoint(current);
    if (this.watchToExpiry.chance(0.25)) return this.waitUntilExpiry(current, joined.body.id, Date.parse(joined.body.expiresAt));
    let state: string = joined.body.state;
    for (let polls = 0; state === 'WAITING' && polls < 3; polls++) {
      const seen = await this.call(current, 'GET', `/allowance-waiters/${joined.body.id}?waitMs=${this.rng.int(500, 10_000)}`);
      if (seen.statusCode === 200) state = seen.body.state;
    }
    if (state === 'WAITING' && this.rng.chance(0.5)) {
      await this.call(current, 'POST', `/allowance-waiters/${joined.body.id}/cancel`, { idempotencyKey: this.key('x') });
    }
  }

  /**
   * Long-polls the waiter until it leaves WAITING or the agent's own clock passes its expiresAt
   * (each poll asks for at most the time its clock says is left), then cancels it if it was
   * still WAITING when last seen: 200 CANCELLED, or 409 when the server had ended it meanwhile.
   */
  private async waitUntilExpiry(current: Current, waiterId: string, expiresAtMs: number): Promise<void> {
    let state = 'WAITING';
    for (let polls = 0; state === 'WAITING' && this.clockNow() < expiresAtMs && polls < 20; polls++) {
      const leftMs = Math.max(0, Math.min(10_000, expiresAtMs - this.clockNow()));
      const seen = await this.call(current, 'GET', `/allowance-waiters/${waiterId}?waitMs=${Math.round(leftMs)}`);
      if (seen.statusCode === 200) state = seen.body.state;
    }
    if (state !== 'WAITING') return;
    const cancelled = await this.call(current, 'POST', `/allowance-waiters/${waiterId}/cancel`, { idempotencyKey: this.key('x') });
    if (cancelled.statusCode === 200 && cancelled.body.state !== 'CANCELLED') {
      this.sim.ledger.violation(`${this.name}: cancel of waiter ${waiterId} answered 200 with state ${cancelled.body.state}`);
    }
  }
}
