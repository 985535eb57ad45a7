import type { SimContext } from '../context';
import { Agent, type Current } from './agent';
import type { TaskFixture } from './task-fixture';

/**
 * How long an admission's reservation may stay ACTIVE before the reaper voids it: past any claim
 * the workers keep (the runtime renews until its handler returns, about 13 s at most in this
 * workload) plus the settle after it.
 */
const graceMs = 45_000;

/**
 * The task budget's owner: an admission's reservation is left ACTIVE on complete for the worker
 * to settle (without settleBy), so a worker that crashed between its complete and its settle
 * leaves it behind. The reaper voids reservations older than the grace; it keeps going through
 * the liveness phase, so nothing stays reserved at the end.
 */
export class TaskReaper extends Agent {
  constructor(
    name: string,
    sim: SimContext,
    private readonly tasks: TaskFixture,
  ) {
    super(name, sim);
  }

  protected async run(current: Current): Promise<void> {
    while (this.sim.phase !== 'done') {
      for (const b of this.tasks.world.budgets) await this.sweep(current, b.id);
      await this.sleep(current, this.rng.int(1_000, 3_000));
    }
  }

  private async sweep(current: Current, budgetId: string): Promise<void> {
    const reply = await this.call(current, 'GET', `/budgets/${budgetId}`);
    if (reply.statusCode !== 200) return;
    for (const r of reply.body.reservations as { id: string; createdAt: string }[]) {
      if (Date.parse(r.createdAt) + graceMs > this.sim.scheduler.now()) continue;
      const voided = await this.call(current, 'POST', `/budgets/${budgetId}/void`, { body: { reservationId: r.id, workKey: `reaper.${r.id}` } });
      // 409: the worker settled it or the claim's end voided it in the meantime.
      if (voided.statusCode !== 200 && voided.statusCode !== 409) this.sim.ledger.violation(`${this.name}: void of ${r.id} answered ${voided.statusCode} ${JSON.stringify(voided.body)}`);
    }
  }
}
