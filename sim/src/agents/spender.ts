import type { HttpReply } from '../http';
import { Agent, type Current } from './agent';

/**
 * A worker that spends: reserve, do some work, then settle (in part, in full, or beyond the
 * reservation) and void what is left, retrying every call until it hears an answer. Now and
 * then it repeats a call it already had answered, as a worker unsure of its own progress does.
 * Its clock is skewed from the server's, which shows in the settleBy it asks for.
 */
export class Spender extends Agent {
  private readonly skewMs = this.rng.int(-this.sim.faults().skewMs, this.sim.faults().skewMs);
  private counter = 0;

  protected async run(current: Current): Promise<void> {
    while (this.sim.phase === 'safety') {
      await this.spendOnce(current);
      await this.sleep(current, this.rng.int(10, 500));
    }
  }

  private async spendOnce(current: Current): Promise<void> {
    const budgetId = this.rng.pick(this.sim.budgetIds);
    const reservation = await this.reserve(current, budgetId);
    if (!reservation) return;
    await this.crashPoint(current);
    await this.sleep(current, this.rng.int(10, 1_500));
    const amount = BigInt(reservation.amountMinor);
    const plan = this.rng.float();
    if (plan < 0.3) await this.settle(current, budgetId, reservation.id, amount);
    else if (plan < 0.45) await this.settle(current, budgetId, reservation.id, amount + BigInt(this.rng.int(1, 200)));
    else if (plan < 0.7) {
      const open = await this.settle(current, budgetId, reservation.id, BigInt(this.rng.int(1, Number(amount))));
      await this.crashPoint(current);
      if (open) await this.void(current, budgetId, reservation.id);
    } else if (plan < 0.85) {
      const open = await this.settle(current, budgetId, reservation.id, 1n);
      if (open) await this.settle(current, budgetId, reservation.id, BigInt(this.rng.int(1, Number(amount))));
    } else await this.void(current, budgetId, reservation.id);
  }

  private nextKey(kind: string): string {
    return `${this.name}.${this.session}.${kind}${this.counter++}`;
  }

  private async reserve(current: Current, budgetId: string): Promise<{ id: string; amountMinor: string } | undefined> {
    const key = this.nextKey('r');
    const amountMinor = BigInt(this.rng.int(1, 400));
    const scopeId = this.rng.uuid();
    const settleBy = new Date(this.sim.scheduler.now() + this.skewMs + this.rng.int(1_000, 20_000)).toISOString();
    this.sim.ledger.requestReserve(key, { agent: this.name, session: this.sessionName, budgetId, scopeId, amountMinor });
    const body = { scopeId, holder: this.name, amountMinor: amountMinor.toString(), settleBy };
    let reply = await this.call(current, 'POST', `/budgets/${budgetId}/reserve`, { body, idempotencyKey: key });
    if (reply.statusCode === 201 && this.rng.chance(0.1)) {
      // A repeat of an answered request: it must replay the same reservation.
      this.sim.ledger.ackReserve(key, reply.body.id);
      reply = await this.call(current, 'POST', `/budgets/${budgetId}/reserve`, { body, idempotencyKey: key });
    }
    if (reply.statusCode === 409 && reply.body.error.code === 'INSUFFICIENT_BUDGET') return undefined;
    if (!this.expect(reply, 201, 'reserve')) return undefined;
    this.sim.ledger.ackReserve(key, reply.body.id);
    return reply.body;
  }

  /** Settles; returns whether the reservation is still ACTIVE afterwards. */
  private async settle(current: Current, budgetId: string, reservationId: string, amountMinor: bigint): Promise<boolean> {
    const workKey = this.nextKey('s');
    this.sim.ledger.requestEntry(budgetId, workKey, { agent: this.name, session: this.sessionName, kind: 'SETTLE', reservationId, amountMinor });
    const body = { reservationId, amountMinor: amountMinor.toString(), workKey };
    // The Idempotency-Key keeps a refused settle refused: workKey dedups only applied entries, so
    // without it a delayed first attempt could still apply after its retry was refused.
    const idempotencyKey = `k.${workKey}`;
    let reply = await this.call(current, 'POST', `/budgets/${budgetId}/settle`, { body, idempotencyKey });
    if (reply.statusCode === 200 && this.rng.chance(0.15)) {
      this.ackEntry(budgetId, workKey, reply);
      reply = await this.call(current, 'POST', `/budgets/${budgetId}/settle`, { body }); // a repeat by workKey alone must replay
    }
    if (reply.statusCode === 409 && reply.body.error.code === 'INSUFFICIENT_BUDGET') return this.void(current, budgetId, reservationId).then(() => false);
    if (reply.statusCode === 409 && reply.body.error.code === 'CONFLICT') return false; // closed meanwhile (the janitor)
    if (!this.expect(reply, 200, 'settle')) return false;
    this.ackEntry(budgetId, workKey, reply);
    return reply.body.reservation.state === 'ACTIVE';
  }

  private async void(current: Current, budgetId: string, reservationId: string): Promise<void> {
    const workKey = this.nextKey('v');
    this.sim.ledger.requestEntry(budgetId, workKey, { agent: this.name, session: this.sessionName, kind: 'VOID', reservationId });
    const reply = await this.call(current, 'POST', `/budgets/${budgetId}/void`, { body: { reservationId, workKey }, idempotencyKey: `k.${workKey}` });
    if (reply.statusCode === 409 && reply.body.error.code === 'CONFLICT') return;
    if (!this.expect(reply, 200, 'void')) return;
    this.ackEntry(budgetId, workKey, reply);
  }

  private ackEntry(budgetId: string, workKey: string, reply: HttpReply): void {
    const { entry, replay, reservation } = reply.body;
    this.sim.ledger.ackEntry(budgetId, workKey, entry.id, replay, BigInt(entry.amountMinor));
    this.sim.ledger.observeState(reservation.id, reservation.state);
  }

  /** An answer no careful client expects is a violation; the agent then drops the operation. */
  private expect(reply: HttpReply, status: number, what: string): boolean {
    if (reply.statusCode === status) return true;
    this.sim.ledger.violation(`${this.name}: ${what} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
    return false;
  }
}
