import { Agent, type Current } from './agent';

/**
 * The budget owner's cleanup: voids reservations whose settleBy has passed, which is how work
 * abandoned by a crashed worker gives its funds back (settleBy itself never voids anything).
 */
export class Janitor extends Agent {
  protected async run(current: Current): Promise<void> {
    while (this.sim.phase !== 'done') {
      for (const budgetId of this.sim.budgetIds) await this.sweep(current, budgetId);
      await this.sleep(current, this.rng.int(500, 3_000));
    }
  }

  private async sweep(current: Current, budgetId: string): Promise<void> {
    const reply = await this.call(current, 'GET', `/budgets/${budgetId}`);
    if (reply.statusCode !== 200) return;
    const graceMs = this.sim.phase === 'liveness' ? 0 : 2_000;
    for (const r of reply.body.reservations as { id: string; settleBy: string | null }[]) {
      if (r.settleBy === null || Date.parse(r.settleBy) + graceMs > this.sim.scheduler.now()) continue;
      const workKey = `janitor.${r.id}`;
      this.sim.ledger.requestEntry(budgetId, workKey, { agent: this.name, session: this.sessionName, kind: 'VOID', reservationId: r.id });
      const voided = await this.call(current, 'POST', `/budgets/${budgetId}/void`, { body: { reservationId: r.id, workKey } });
      if (voided.statusCode === 200) {
        this.sim.ledger.ackEntry(budgetId, workKey, voided.body.entry.id, voided.body.replay, BigInt(voided.body.entry.amountMinor));
        this.sim.ledger.observeState(r.id, voided.body.reservation.state);
      }
    }
  }
}
