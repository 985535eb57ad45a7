import type { SimContext } from '../context';
import { Agent, type Current } from './agent';
import type { TaskFixture } from './task-fixture';

/**
 * Submits tasks: mostly new taskKeys, now and then one submitted before (by any session), which
 * must join the same task (create-or-join: 200, created false). The body of a key is drawn from
 * the key itself, so a repeat always has the same fingerprint.
 */
export class TaskSubmitter extends Agent {
  private counter = 0;

  constructor(
    name: string,
    sim: SimContext,
    private readonly tasks: TaskFixture,
  ) {
    super(name, sim);
  }

  protected async run(current: Current): Promise<void> {
    while (this.sim.phase === 'safety') {
      await this.submit(current);
      await this.sleep(current, this.rng.int(50, 800));
    }
  }

  private async submit(current: Current): Promise<void> {
    const known = [...this.tasks.ledger.taskIdByKey.keys()];
    const repeat = known.length > 0 && this.rng.chance(0.15);
    const taskKey = repeat ? this.rng.pick(known) : `${this.name}.${this.session}.t${this.counter}`;
    const spec = this.tasks.specOf(taskKey);
    const body = { scopeId: this.tasks.scopeId, taskKey, ...spec };
    const reply = await this.call(current, 'POST', '/tasks', { body, idempotencyKey: `${this.name}.${this.session}.s${this.counter++}` });
    if (reply.statusCode === 429 && reply.body.error.code === 'BACKLOG_FULL') return;
    if (reply.statusCode !== 201 && reply.statusCode !== 200) return this.sim.ledger.violation(`${this.name}: submit of ${taskKey} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
    if (repeat && reply.body.created !== false) this.sim.ledger.violation(`${this.name}: a repeat submit of ${taskKey} answered created ${String(reply.body.created)}`);
    this.tasks.ledger.submitted(taskKey, reply.body.taskId);
  }
}
