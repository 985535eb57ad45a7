import type { GroupLedger } from '../checks/groups';
import type { SimContext } from '../context';
import type { HttpReply } from '../http';
import { Agent, type Current } from './agent';
import type { TaskFixture } from './task-fixture';

const terminal = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED', 'EXPIRED']);

/** What a verdict's answer may be, as a view before it left it (see verdict). */
type Expect = 'may' | 'must-refuse' | 'must-grant';

/**
 * A reject of a member the view showed ended without success and still PENDING: no accept can
 * ever land on it (it did not succeed, and its state is final), and a repeat reject is
 * idempotent, so the reject must be taken. A SUCCEEDED member may meet an accept in flight.
 */
const rejectExpect = (m: MemberView): Expect => (terminal.has(m.taskState) && m.taskState !== 'SUCCEEDED' && m.verdict === 'PENDING' ? 'must-grant' : 'may');
/** How long a coordinator races one group before it moves on (a group may stay undecided: that is allowed while its condition is not met). */
const raceMs = 15_000;
/** Long-poll waits stay under the network's 2 s timeout. */
const maxWaitMs = 1_500;

interface MemberView {
  taskId: string;
  taskState: string;
  verdict: string;
}

interface GroupView {
  id: string;
  state: string;
  outcome: string | null;
  outcomeReason: string | null;
  decidedAt: string | null;
  members: MemberView[];
}

/**
 * A coordinator (docs/design/0010-task-groups.md) fans work out as a task group on the task mailbox, under the
 * scope the task workers admit on (parentScopeId), so the runtime workers complete and nack
 * its members under the run's faults. Then it races: verdicts on terminal members (mostly the
 * right ones, now and then a wrong one that must answer 409), a close or seal at a random
 * moment (or never, when expectedMembers closes membership), a cancel of a member, the
 * deadline, and late verdicts once the group decided (recorded, the outcome unchanged: where a
 * group that decides twice shows itself). Each group draws its condition, threshold,
 * expectedMembers (sometimes absent) and deadline (sometimes, on the agent's skewed clock).
 */
export class GroupCoordinator extends Agent {
  private counter = 0;
  private readonly skewMs = this.rng.int(-this.sim.faults().skewMs, this.sim.faults().skewMs);

  constructor(
    name: string,
    sim: SimContext,
    private readonly tasks: TaskFixture,
    private readonly groups: GroupLedger,
  ) {
    super(name, sim);
  }

  protected async run(current: Current): Promise<void> {
    while (this.sim.phase === 'safety') {
      await this.coordinate(current);
      await this.sleep(current, this.rng.int(200, 2_000));
    }
  }

  private key(kind: string): string {
    return `${this.name}.${this.session}.${kind}${this.counter++}`;
  }

  private async coordinate(current: Current): Promise<void> {
    const expectedMembers = this.rng.chance(0.5) ? this.rng.int(1, 5) : undefined;
    const groupId = await this.create(current, expectedMembers);
    if (groupId === undefined) return;
    // Fan out to expectedMembers (one more now and then: it must find membership closed), or 1 to 5.
    const fanOut = expectedMembers === undefined ? this.rng.int(1, 5) : expectedMembers + (this.rng.chance(0.2) ? 1 : 0);
    // Close early (mid fan-out) sometimes; without expectedMembers usually later, in the race.
    const closeAt = this.rng.chance(0.25) ? this.rng.int(0, fanOut) : -1;
    let closed = false;
    for (let i = 0; i < fanOut && this.sim.phase === 'safety'; i++) {
      if (i === closeAt) closed = await this.close(current, groupId);
      if (this.rng.chance(0.15)) await this.joinOutside(current, groupId);
      else await this.addMember(current, groupId);
      await this.crashPoint(current);
      if (this.rng.chance(0.5)) await this.sleep(current, this.rng.int(0, 300));
    }
    const closeInRace = !closed && (expectedMembers === undefined ? this.rng.chance(0.85) : this.rng.chance(0.2));
    await this.race(current, groupId, closeInRace ? this.rng.int(0, 8) : -1);
  }

  private async create(current: Current, expectedMembers: number | undefined): Promise<string | undefined> {
    const condition = this.rng.pick(['FIRST_ACCEPTED', 'N_ACCEPTED', 'ALL_TERMINAL'] as const);
    const body: Record<string, unknown> = { parentScopeId: this.tasks.scopeId, mailboxId: this.tasks.world.mailboxIds[0], condition };
    if (condition === 'N_ACCEPTED') body.threshold = this.rng.int(1, 4);
    else if (condition === 'FIRST_ACCEPTED' && this.rng.chance(0.3)) body.threshold = 1;
    if (expectedMembers !== undefined) body.expectedMembers = expectedMembers;
    // On the agent's clock: with skew, now and then a deadline already passed (the group decides at once).
    if (this.rng.chance(0.35)) body.deadline = new Date(this.sim.scheduler.now() + this.skewMs + this.rng.int(2_000, 30_000)).toISOString();
    const reply = await this.call(current, 'POST', '/task-groups', { body, idempotencyKey: this.key('g') });
    if (reply.statusCode !== 201) return void this.unexpected('create group', reply);
    this.groups.created.add(reply.body.groupId);
    this.groups.stats.created++;
    return reply.body.groupId;
  }

  /** A member task made through the group: 201 (200 on a repeat); 409 once membership closed (by a seal, expectedMembers or the deadline). */
  private async addMember(current: Current, groupId: string): Promise<void> {
    const taskKey = this.key('m');
    const body: Record<string, unknown> = { taskKey, input: { n: this.rng.int(1, 1_000) } };
    if (this.rng.chance(0.1)) body.deadline = new Date(this.sim.scheduler.now() + this.skewMs + this.rng.int(2_000, 20_000)).toISOString();
    const reply = await this.call(current, 'POST', `/task-groups/${groupId}/tasks`, { body, idempotencyKey: this.key('k') });
    if (reply.statusCode === 201 || reply.statusCode === 200) return this.tasks.ledger.heardOf(reply.body.taskId);
    if (this.refused(reply) || (reply.statusCode === 429 && reply.body.error.code === 'BACKLOG_FULL')) return;
    this.unexpected(`add member ${taskKey} to ${groupId}`, reply);
  }

  /** Joins a task from outside: one of its own (submitted in the workers' scope) or one the submitter made (409 when it is in another group). */
  private async joinOutside(current: Current, groupId: string): Promise<void> {
    let taskId: string;
    if (this.rng.chance(0.5) && this.tasks.ledger.taskIds.length > 0) {
      taskId = this.rng.pick(this.tasks.ledger.taskIds);
    } else {
      const taskKey = this.key('o');
      const body = { scopeId: this.tasks.scopeId, taskKey, ...this.tasks.specOf(taskKey) };
      const submitted = await this.call(current, 'POST', '/tasks', { body, idempotencyKey: this.key('s') });
      if (submitted.statusCode === 429 && submitted.body.error.code === 'BACKLOG_FULL') return;
      if (submitted.statusCode !== 201 && submitted.statusCode !== 200) return this.unexpected(`submit of ${taskKey}`, submitted);
      taskId = submitted.body.taskId;
      this.tasks.ledger.heardOf(taskId);
    }
    const reply = await this.call(current, 'POST', `/task-groups/${groupId}/join-task`, { body: { taskId }, idempotencyKey: this.key('j') });
    if (reply.statusCode === 200) return this.groups.observed(reply.body);
    if (!this.refused(reply)) this.unexpected(`join of task ${taskId} to ${groupId}`, reply);
  }

  /** close (idempotent, always 200) or seal (409 unless OPEN). True once membership is known closed. */
  private async close(current: Current, groupId: string): Promise<boolean> {
    const how = this.rng.chance(0.5) ? 'close' : 'seal';
    const reply = await this.call(current, 'POST', `/task-groups/${groupId}/${how}`, { idempotencyKey: this.key('c') });
    if (reply.statusCode === 200) {
      this.groups.observed(reply.body);
      if (reply.body.state === 'OPEN') this.sim.ledger.violation(`${this.name}: ${how} of group ${groupId} answered 200 with the group still OPEN`);
      return true;
    }
    if (how === 'seal' && this.refused(reply)) return true;
    this.unexpected(`${how} of ${groupId}`, reply);
    return false;
  }

  /**
   * Watches the group (sometimes by long poll) and acts on what it sees until it decides or the
   * race runs out: verdicts, a close at round `closeRound`, a member cancelled now and then,
   * and after the decision, late verdicts.
   */
  private async race(current: Current, groupId: string, closeRound: number): Promise<void> {
    const endMs = this.sim.scheduler.now() + raceMs;
    for (let round = 0; this.sim.phase === 'safety' && this.sim.scheduler.now() < endMs; round++) {
      const view = await this.read(current, groupId);
      if (!view) return;
      if (view.state === 'DECIDED') {
        if (this.rng.chance(0.6)) await this.lateVerdicts(current, view);
        return;
      }
      if (round === closeRound) await this.close(current, groupId);
      for (const m of view.members) await this.judge(current, groupId, m);
      const live = view.members.filter((m) => !terminal.has(m.taskState));
      if (live.length > 0 && this.rng.chance(0.05)) await this.cancelMember(current, this.rng.pick(live).taskId);
      await this.crashPoint(current);
      if (this.rng.chance(0.5)) await this.sleep(current, this.rng.int(200, 1_500));
    }
  }

  private async read(current: Current, groupId: string): Promise<GroupView | undefined> {
    const wait = this.rng.chance(0.4) ? `?waitMs=${this.rng.int(200, maxWaitMs)}` : '';
    const reply = await this.call(current, 'GET', `/task-groups/${groupId}${wait}`);
    if (reply.statusCode !== 200) return void this.unexpected(`GET group ${groupId}`, reply);
    this.groups.observed(reply.body);
    return reply.body as GroupView;
  }

  /** A verdict on a member as the view shows it: mostly the fitting one, sometimes none yet, now and then a wrong one (must be 409). */
  private async judge(current: Current, groupId: string, m: MemberView): Promise<void> {
    if (this.rng.chance(0.04)) return this.wrongVerdict(current, groupId, m);
    if (m.verdict !== 'PENDING' || !terminal.has(m.taskState)) return;
    const roll = this.rng.float();
    if (m.taskState === 'SUCCEEDED' && roll < 0.55) return void (await this.verdict(current, groupId, m.taskId, 'accept', 'may'));
    if (roll < (m.taskState === 'SUCCEEDED' ? 0.65 : 0.5)) return void (await this.verdict(current, groupId, m.taskId, 'reject', rejectExpect(m)));
  }

  /** A verdict the service must refuse: accept of an ended member that did not succeed, or the other verdict after one was given. */
  private async wrongVerdict(current: Current, groupId: string, m: MemberView): Promise<void> {
    if (m.verdict === 'ACCEPTED') return void (await this.verdict(current, groupId, m.taskId, 'reject', 'must-refuse'));
    if (m.verdict === 'REJECTED') return void (await this.verdict(current, groupId, m.taskId, 'accept', 'must-refuse'));
    if (terminal.has(m.taskState) && m.taskState !== 'SUCCEEDED') return void (await this.verdict(current, groupId, m.taskId, 'accept', 'must-refuse'));
    // A live member: it may end before the call arrives, so either answer is right.
    if (!terminal.has(m.taskState)) await this.verdict(current, groupId, m.taskId, this.rng.chance(0.5) ? 'accept' : 'reject', 'may');
  }

  /** Verdicts on a DECIDED group: recorded, but the outcome must not move. */
  private async lateVerdicts(current: Current, view: GroupView): Promise<void> {
    for (const m of view.members) {
      if (m.verdict !== 'PENDING' || !terminal.has(m.taskState) || this.rng.chance(0.3)) continue;
      const what = m.taskState === 'SUCCEEDED' && this.rng.chance(0.7) ? 'accept' : 'reject';
      await this.verdict(current, view.id, m.taskId, what, what === 'reject' ? rejectExpect(m) : 'may');
    }
  }

  /**
   * `must-refuse`: the view already made this verdict impossible, so only 409 CONFLICT is right.
   * `must-grant`: the view made it the only verdict possible, so only 200 is right.
   */
  private async verdict(current: Current, groupId: string, taskId: string, what: 'accept' | 'reject', expect: Expect): Promise<HttpReply> {
    const reply = await this.call(current, 'POST', `/task-groups/${groupId}/tasks/${taskId}/${what}`, { idempotencyKey: this.key('v') });
    if (expect === 'must-grant' && reply.statusCode !== 200) {
      this.sim.ledger.violation(`${this.name}: ${what} of member ${taskId} of group ${groupId} answered ${reply.statusCode} ${JSON.stringify(reply.body)}, but a view before it showed the member ended without success and no verdict yet, so only that verdict was possible`);
    }
    if (reply.statusCode === 200) {
      this.groups.stats.verdicts++;
      this.groups.observed(reply.body.group);
      if (expect === 'must-refuse') this.sim.ledger.violation(`${this.name}: ${what} of member ${taskId} of group ${groupId} answered 200, but a view before it made that verdict impossible`);
      const wanted = what === 'accept' ? 'ACCEPTED' : 'REJECTED';
      if (reply.body.verdict !== wanted) this.sim.ledger.violation(`${this.name}: ${what} of member ${taskId} of group ${groupId} answered 200 with verdict ${reply.body.verdict}`);
    } else if (!this.refused(reply)) {
      this.unexpected(`${what} of member ${taskId} of ${groupId}`, reply);
    }
    return reply;
  }

  private async cancelMember(current: Current, taskId: string): Promise<void> {
    const reply = await this.call(current, 'POST', `/tasks/${taskId}/cancel`, { body: { reason: 'coordinator' }, idempotencyKey: this.key('x') });
    if (reply.statusCode === 200) return this.tasks.ledger.cancelAnswered(taskId);
    if (!this.refused(reply)) this.unexpected(`cancel of member ${taskId}`, reply);
  }

  private unexpected(what: string, reply: HttpReply): void {
    this.sim.ledger.violation(`${this.name}: ${what} answered ${reply.statusCode} ${JSON.stringify(reply.body)}`);
  }

  /** A 409 CONFLICT: membership closed, a verdict that does not fit, a seal of a group no longer OPEN (counted). */
  private refused(reply: HttpReply): boolean {
    const refused = reply.statusCode === 409 && reply.body?.error?.code === 'CONFLICT';
    if (refused) this.groups.stats.refused++;
    return refused;
  }
}
