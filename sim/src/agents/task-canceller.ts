import type { SimContext } from '../context';
import type { HttpReply } from '../http';
import { SimRandom } from '../rng';
import { Agent, type Current } from './agent';
import type { TaskFixture } from './task-fixture';

/** A cancel this canceller wrote down before sending it: the task and the Idempotency-Key it sent under. */
interface PendingCancel {
  taskId: string;
  idempotencyKey: string;
}

/**
 * Cancels random tasks it has heard of (any state: a terminal one must answer 409 CONFLICT),
 * and now and then reads one. A cancel of a CLAIMED delivery kills its lease: its worker's
 * complete must then answer LEASE_LOST, and the claim's pool units and slot must come back.
 *
 * Each cancel is written down before it is sent and crossed off once its answer is recorded. A
 * crash in between leaves it written down: the next session sends it again under the same
 * Idempotency-Key (its answer replays, or the cancel runs now if the first never committed),
 * then once more under a new key, which must find the task ended: one task.cancelled at most
 * (the journal replay), and a cancel answered 200 is a cancelled task (checks/tasks.ts).
 *
 * With clock skew it also supervises overdue tasks now and then: it lists the live tasks of the
 * run's scope and cancels those whose deadline has passed on its own clock. A clock ahead
 * cancels before the server's deadline sweep would expire the task (200: the task must end
 * CANCELLED, and only once: the journal replay), racing the sweep near the deadline; a clock
 * behind leaves them to the sweep (they are EXPIRED before its clock says overdue).
 */
export class TaskCanceller extends Agent {
  private counter = 0;
  /** Survives a crash: what the agent persisted before sending. */
  private pending: PendingCancel | undefined;
  /** Its own stream for crashes, so that crash-free runs draw exactly what they drew before. */
  private readonly crashRng = new SimRandom(`${this.rng.seed}/crashes`);
  /** Its own stream, so that skew-free runs draw exactly what they drew before. */
  private readonly skewRng = new SimRandom(`${this.rng.seed}/overdue`);

  constructor(
    name: string,
    sim: SimContext,
    private readonly tasks: TaskFixture,
  ) {
    super(name, sim);
  }

  protected async run(current: Current): Promise<void> {
    if (this.pending) await this.recover(current, this.pending);
    while (this.sim.phase === 'safety') {
      await this.sleep(current, this.rng.int(1_000, 5_000));
      if (this.clockSkewMs !== 0 && this.skewRng.chance(0.5)) await this.cancelOverdue(current);
      if (this.tasks.ledger.taskIds.length === 0) continue;
      const taskId = this.rng.pick(this.tasks.ledger.taskIds);
      if (this.rng.chance(0.7)) await this.cancel(current, taskId);
      else await this.read(current, taskId);
    }
  }

  private async cancel(current: Current, taskId: string): Promise<void> {
    const idempotencyKey = `${this.name}.${this.session}.c${this.counter++}`;
    this.pending = { taskId, idempotencyKey };
    const reply = await this.send(current, taskId, idempotencyKey);
    await this.crashPoint(current, this.crashRng);
    this.pending = undefined;
    this.record(taskId, reply, 'cancel');
  }

  /** The cancel a crash left unrecorded: again under its key, then under a new one. */
  private async recover(current: Current, pending: PendingCancel): Promise<void> {
    const again = await this.send(current, pending.taskId, pending.idempotencyKey);
    this.pending = undefined;
    this.record(pending.taskId, again, 'cancel sent again under its key');
    const fresh = await this.send(current, pending.taskId, `${this.name}.${this.session}.c${this.counter++}`);
    // Whatever the first answer was, the task has ended now: the cancel must not run twice.
    if (fresh.statusCode !== 409 || fresh.body.error.code !== 'CONFLICT') this.sim.ledger.violation(`${this.name}: a cancel of task ${pending.taskId} after its cancel committed answered ${fresh.statusCode} ${JSON.stringify(fresh.body)}`);
  }

  private send(current: Current, taskId: string, idempotencyKey: string): Promise<HttpReply> {
    return this.call(current, 'POST', `/tasks/${taskId}/cancel`, { body: { reason: 'sim' }, idempotencyKey });
  }

  private record(taskId: string, reply: HttpReply, what: string): void {
    if (reply.statusCode === 200) return this.tasks.ledger.cancelAnswered(taskId);
    // A retry of a cancel that committed finds the task CANCELLED: 409 too.
    if (reply.statusCode === 409 && reply.body.error.code === 'CONFLICT') return;
    this.sim.ledger.violation(`${this.name}: ${what} of task ${taskId} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
  }

  /** Cancels the live tasks whose deadline has passed on its own clock (the first page of them). */
  private async cancelOverdue(current: Current): Promise<void> {
    const query = new URLSearchParams({ scopeId: this.tasks.scopeId, state: 'PENDING,RUNNING', limit: '100' });
    const reply = await this.call(current, 'GET', `/tasks?${query}`);
    if (reply.statusCode !== 200) return this.sim.ledger.violation(`${this.name}: GET tasks answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
    const overdue = (reply.body.items as { id: string; deadline: string | null }[]).filter((t) => t.deadline !== null && Date.parse(t.deadline) <= this.clockNow());
    for (const task of overdue.slice(0, 3)) await this.cancel(current, task.id);
  }

  private async read(current: Current, taskId: string): Promise<void> {
    const reply = await this.call(current, 'GET', `/tasks/${taskId}`);
    if (reply.statusCode !== 200) return this.sim.ledger.violation(`${this.name}: GET task ${taskId} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
    if (reply.body.attempts > 5) this.sim.ledger.violation(`task ${taskId} shows ${reply.body.attempts} attempts > 5`);
  }
}
