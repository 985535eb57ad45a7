import type { SimContext } from '../context';
import { Agent, type Current } from './agent';
import type { TaskFixture } from './task-fixture';

/**
 * Cancels random tasks it has heard of (any state: a terminal one must answer 409 CONFLICT),
 * and now and then reads one. A cancel of a CLAIMED delivery kills its lease: its worker's
 * complete must then answer LEASE_LOST, and the claim's pool units and slot must come back.
 */
export class TaskCanceller extends Agent {
  constructor(
    name: string,
    sim: SimContext,
    private readonly tasks: TaskFixture,
  ) {
    super(name, sim);
  }

  protected async run(current: Current): Promise<void> {
    while (this.sim.phase === 'safety') {
      await this.sleep(current, this.rng.int(1_000, 5_000));
      if (this.tasks.ledger.taskIds.length === 0) continue;
      const taskId = this.rng.pick(this.tasks.ledger.taskIds);
      if (this.rng.chance(0.7)) await this.cancel(current, taskId);
      else await this.read(current, taskId);
    }
  }

  private async cancel(current: Current, taskId: string): Promise<void> {
    const reply = await this.call(current, 'POST', `/tasks/${taskId}/cancel`, { body: { reason: 'sim' } });
    if (reply.statusCode === 200) return this.tasks.ledger.cancelAnswered(taskId);
    // A retry of a cancel that committed finds the task CANCELLED: 409 too.
    if (reply.statusCode === 409 && reply.body.error.code === 'CONFLICT') return;
    this.sim.ledger.violation(`${this.name}: cancel of task ${taskId} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
  }

  private async read(current: Current, taskId: string): Promise<void> {
    const reply = await this.call(current, 'GET', `/tasks/${taskId}`);
    if (reply.statusCode !== 200) return this.sim.ledger.violation(`${this.name}: GET task ${taskId} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
    if (reply.body.attempts > 5) this.sim.ledger.violation(`task ${taskId} shows ${reply.body.attempts} attempts > 5`);
  }
}
