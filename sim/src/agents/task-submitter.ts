import type { SimContext } from '../context';
import type { HttpReply } from '../http';
import { SimRandom } from '../rng';
import { Agent, type Current } from './agent';
import type { TaskFixture } from './task-fixture';

/** A submit this submitter wrote down before sending it, as a client persists its intent first. */
interface PendingSubmit {
  taskKey: string;
  idempotencyKey: string;
  body: Record<string, unknown>;
  repeat: boolean;
}

/**
 * Submits tasks: mostly new taskKeys, now and then one submitted before (by any session), which
 * must join the same task (create-or-join: 200, created false). The body of a key is drawn from
 * the key itself, so a repeat always has the same fingerprint.
 *
 * It writes each submit down before sending it and crosses it off once the answer is recorded;
 * a crash in between (after the send, before the record) leaves it written down, and the next
 * session submits it again, the same taskKey and body, half the time under the same
 * Idempotency-Key (the first answer must replay) and half under a new one (create-or-join by
 * taskKey): either way the same task, which the ledger then holds once. Half the joins of a
 * known key are followed by a submit of the key with another input, which must be refused.
 *
 * With clock skew some submits carry a deadline on the agent's own clock: one behind the
 * server's may name a time already past, and the task must expire, never before its deadline.
 */
export class TaskSubmitter extends Agent {
  private counter = 0;
  /** Survives a crash: what the agent persisted before sending. */
  private pending: PendingSubmit | undefined;
  /** Its own streams for crashes and skewed deadlines, so that fault-free runs draw exactly what they drew before. */
  private readonly crashRng = new SimRandom(`${this.rng.seed}/crashes`);
  private readonly skewRng = new SimRandom(`${this.rng.seed}/skewed-deadlines`);
  /** Whether a join is followed by a submit of the key with another input, from a stream of its own. */
  private readonly alteredRng = new SimRandom(`${this.rng.seed}/altered-input`);

  constructor(
    name: string,
    sim: SimContext,
    private readonly tasks: TaskFixture,
  ) {
    super(name, sim);
  }

  protected async run(current: Current): Promise<void> {
    if (this.pending) await this.resubmit(current, this.pending);
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
    const body: Record<string, unknown> = { scopeId: this.tasks.scopeId, taskKey, ...spec, ...this.deadline() };
    const idempotencyKey = `${this.name}.${this.session}.s${this.counter++}`;
    this.pending = { taskKey, idempotencyKey, body, repeat };
    const reply = await this.call(current, 'POST', '/tasks', { body, idempotencyKey });
    await this.crashPoint(current, this.crashRng);
    this.pending = undefined;
    this.record(taskKey, reply, repeat);
    if (repeat && reply.statusCode === 200 && this.alteredRng.chance(0.5)) await this.submitAltered(current, body);
  }

  /**
   * The key of a task that exists, with another input, under a new Idempotency-Key: a taskKey
   * names one task, so another fingerprint must be refused (409 TASK_KEY_CONFLICT), never joined.
   */
  private async submitAltered(current: Current, body: Record<string, unknown>): Promise<void> {
    const altered = { ...body, input: { altered: body.input ?? null } };
    const reply = await this.call(current, 'POST', '/tasks', { body: altered, idempotencyKey: `${this.name}.${this.session}.x${this.counter++}` });
    if (reply.statusCode === 429 && reply.body.error.code === 'BACKLOG_FULL') return;
    if (reply.statusCode !== 409 || reply.body.error?.code !== 'TASK_KEY_CONFLICT') {
      this.sim.ledger.violation(`${this.name}: submit of ${String(body.taskKey)} with another input answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
    }
  }

  /**
   * The submit a crash left unrecorded, sent again. It must land on the task the first one
   * made (if it committed): the ledger says so when another answer named the key already.
   */
  private async resubmit(current: Current, pending: PendingSubmit): Promise<void> {
    const sameKey = this.crashRng.chance(0.5);
    const idempotencyKey = sameKey ? pending.idempotencyKey : `${this.name}.${this.session}.again${this.counter++}`;
    const reply = await this.call(current, 'POST', '/tasks', { body: pending.body, idempotencyKey });
    this.pending = undefined;
    // A new Idempotency-Key makes a create-or-join: created false if anyone's submit of the key committed.
    const known = this.tasks.ledger.taskIdByKey.has(pending.taskKey);
    this.record(pending.taskKey, reply, !sameKey && (pending.repeat || known));
  }

  /** With skew, a fifth of the submits carry a deadline 5 to 30 s ahead on the agent's clock. */
  private deadline(): { deadline?: string } {
    if (this.clockSkewMs === 0 || !this.skewRng.chance(0.2)) return {};
    return { deadline: new Date(this.clockNow() + this.skewRng.int(5_000, 30_000)).toISOString() };
  }

  private record(taskKey: string, reply: HttpReply, joins: boolean): void {
    if (reply.statusCode === 429 && reply.body.error.code === 'BACKLOG_FULL') return;
    if (reply.statusCode !== 201 && reply.statusCode !== 200) return this.sim.ledger.violation(`${this.name}: submit of ${taskKey} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
    if (joins && reply.body.created !== false) this.sim.ledger.violation(`${this.name}: a repeat submit of ${taskKey} answered created ${String(reply.body.created)}`);
    this.tasks.ledger.submitted(taskKey, reply.body.taskId);
  }
}
