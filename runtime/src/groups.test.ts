import { randomUUID } from 'node:crypto';
import { decide, type TaskGroup } from '@baton/core';
import { describe, expect, it } from 'vitest';
import type { CallOptions, GroupView, In, TaskGroupApi } from './contract';
import type { schemas } from '@baton/core';
import { BatonApiError } from './errors';
import { runGroup, type EndedMember, type MemberVerdict, type RunGroupOptions } from './groups';
import { WaitTimeoutError } from './helpers';
import { SteppingClock } from './testing/stepping-clock';

type TaskState = GroupView['members'][number]['taskState'];
type Verdict = GroupView['members'][number]['verdict'];

const at = (ms: number): string => new Date(ms).toISOString();
const conflict = (message: string): BatonApiError => new BatonApiError({ code: 'CONFLICT', status: 409, message, requestId: null });
const terminal = (state: TaskState): boolean => ['SUCCEEDED', 'FAILED', 'CANCELLED', 'EXPIRED'].includes(state);

interface FakeTask {
  id: string;
  taskKey: string;
  scopeId: string;
  state: TaskState;
  outcome: unknown;
  verdict: Verdict;
}

/**
 * One task group server in memory, deciding with core's own rule (`decide`): idempotent replays
 * by key, create-or-join by taskKey, verdict rules, cancellation of live members on a decision.
 * `onPoll` runs before each long poll answers: the test's workers move there.
 */
class FakeGroups implements TaskGroupApi {
  group: TaskGroup | undefined;
  readonly tasks: FakeTask[] = [];
  readonly calls: { op: string; args: unknown[] }[] = [];
  readonly polls: number[] = [];
  private readonly replies = new Map<string, unknown>();
  onPoll: (poll: number) => void = () => undefined;
  /** Runs before a verdict is applied: a test's other coordinator acts here. */
  beforeVerdict: (taskId: string) => void = () => undefined;

  constructor(readonly clock: SteppingClock) {}

  async createGroup(body: In<typeof schemas.groupCreateBody>, o?: CallOptions) {
    this.calls.push({ op: 'createGroup', args: [body, o] });
    return this.replayed(o, () => {
      const now = this.clock.now();
      this.group = {
        id: randomUUID(), spaceId: 's', scopeId: randomUUID(), parentScopeId: body.parentScopeId ?? null, mailboxId: body.mailboxId,
        condition: body.condition, threshold: body.condition === 'ALL_TERMINAL' ? null : (body.threshold ?? 1), expectedMembers: body.expectedMembers ?? null,
        deadline: body.deadline ? Date.parse(body.deadline) : null, state: 'OPEN', outcome: null, outcomeReason: null, memberCount: 0, decidedAt: null, createdAt: now, updatedAt: now,
      };
      return { groupId: this.group.id, scopeId: this.group.scopeId };
    });
  }

  async getGroup(groupId: string, waitMs?: number, o?: CallOptions): Promise<GroupView> {
    this.calls.push({ op: 'getGroup', args: [groupId, waitMs, o] });
    if (waitMs !== undefined && waitMs > 0) {
      this.polls.push(waitMs);
      this.onPoll(this.polls.length);
    }
    return this.view();
  }

  async createMemberTask(groupId: string, body: In<typeof schemas.memberTaskBody>, o?: CallOptions) {
    this.calls.push({ op: 'createMemberTask', args: [groupId, body, o] });
    return this.replayed(o, () => {
      const group = this.group!;
      if (group.state !== 'OPEN') throw conflict(`task group ${group.id} is ${group.state}: membership is closed`);
      const existing = this.tasks.find((t) => t.taskKey === body.taskKey);
      if (existing) return { taskId: existing.id, state: existing.state, created: false };
      const task: FakeTask = { id: randomUUID(), taskKey: body.taskKey, scopeId: group.scopeId, state: 'PENDING', outcome: null, verdict: 'PENDING' };
      this.tasks.push(task);
      group.memberCount++;
      if (group.memberCount === group.expectedMembers) group.state = 'SEALED';
      this.evaluate();
      return { taskId: task.id, state: task.state, created: true };
    });
  }

  acceptMember(groupId: string, taskId: string, o?: CallOptions) {
    return this.verdict('acceptMember', groupId, taskId, 'ACCEPTED', o);
  }

  rejectMember(groupId: string, taskId: string, o?: CallOptions) {
    return this.verdict('rejectMember', groupId, taskId, 'REJECTED', o);
  }

  async getTask(taskId: string, o?: CallOptions) {
    this.calls.push({ op: 'getTask', args: [taskId, o] });
    const task = this.tasks.find((t) => t.id === taskId)!;
    return { id: task.id, taskKey: task.taskKey, state: task.state, outcome: task.outcome } as Awaited<ReturnType<TaskGroupApi['getTask']>>;
  }

  async listTasks(query?: { scopeId?: string }, o?: CallOptions) {
    this.calls.push({ op: 'listTasks', args: [query, o] });
    const items = this.tasks.filter((t) => t.scopeId === query?.scopeId).map((t) => ({ id: t.id, taskKey: t.taskKey, state: t.state }));
    return { items, nextCursor: null } as unknown as Awaited<ReturnType<TaskGroupApi['listTasks']>>;
  }

  /** A worker finishing a member: the group evaluates as the server's task hook makes it. */
  finish(key: string, state: TaskState, outcome: unknown = null): void {
    const task = this.task(key);
    if (terminal(task.state)) return;
    Object.assign(task, { state, outcome: state === 'SUCCEEDED' ? outcome : null });
    this.evaluate();
  }

  task(key: string): FakeTask {
    const task = this.tasks.find((t) => t.taskKey.endsWith(`:${key}`));
    if (!task) throw new Error(`no member ${key}`);
    return task;
  }

  ops(op?: string): string[] {
    return this.calls.map((c) => c.op).filter((o) => op === undefined || o === op);
  }

  private async verdict(op: string, groupId: string, taskId: string, verdict: 'ACCEPTED' | 'REJECTED', o?: CallOptions) {
    this.calls.push({ op, args: [groupId, taskId, o] });
    this.beforeVerdict(taskId);
    const task = this.tasks.find((t) => t.id === taskId)!;
    if (task.verdict !== verdict) {
      if (task.verdict !== 'PENDING') throw conflict(`member ${taskId} is already ${task.verdict}; a verdict is final`);
      if (verdict === 'ACCEPTED' && task.state !== 'SUCCEEDED') throw conflict(`member ${taskId} is ${task.state}`);
      if (verdict === 'REJECTED' && !terminal(task.state)) throw conflict(`member ${taskId} is ${task.state}`);
      task.verdict = verdict;
      this.evaluate();
    }
    return { taskId, verdict, group: this.view() };
  }

  private evaluate(): void {
    const group = this.group!;
    if (group.state === 'DECIDED') return;
    const decision = decide(group, this.tasks.map((t) => ({ taskId: t.id, verdict: t.verdict, taskState: t.state })), this.clock.now());
    if (!decision) return;
    Object.assign(group, { state: 'DECIDED', ...decision, decidedAt: this.clock.now() });
    for (const t of this.tasks) if (!terminal(t.state)) t.state = 'CANCELLED';
  }

  private replayed<T>(o: CallOptions | undefined, apply: () => T): T {
    const key = o?.idempotencyKey;
    if (key !== undefined && this.replies.has(key)) return this.replies.get(key) as T;
    const reply = apply();
    if (key !== undefined) this.replies.set(key, reply);
    return reply;
  }

  private view(): GroupView {
    const g = this.group!;
    return {
      id: g.id, scopeId: g.scopeId, parentScopeId: g.parentScopeId, mailboxId: g.mailboxId, state: g.state, condition: g.condition, threshold: g.threshold,
      expectedMembers: g.expectedMembers, deadline: g.deadline === null ? null : at(g.deadline), outcome: g.outcome, outcomeReason: g.outcomeReason,
      decidedAt: g.decidedAt === null ? null : at(g.decidedAt), createdAt: at(g.createdAt), updatedAt: at(g.updatedAt),
      members: this.tasks.map((t) => ({ taskId: t.id, taskState: t.state, verdict: t.verdict, joinedAt: at(g.createdAt) })),
    };
  }
}

const mailboxId = randomUUID();
const members = (...keys: string[]) => keys.map((key) => ({ key, input: { key } }));

function setup() {
  const clock = new SteppingClock();
  const fake = new FakeGroups(clock);
  const asked: EndedMember[] = [];
  /** A verifier answering from a table by member key, recording what it was shown. */
  const verifier = (answers: Record<string, MemberVerdict>) => (member: EndedMember): MemberVerdict => {
    asked.push(member);
    return answers[member.key!]!;
  };
  const run = (options: Partial<RunGroupOptions> & Pick<RunGroupOptions, 'condition' | 'members'>) => runGroup(fake, { mailboxId, clock, groupKey: 'run-7', ...options });
  return { clock, fake, asked, verifier, run };
}

describe('runGroup: creating and fanning out', () => {
  it('creates the group with expectedMembers defaulting to the member count, and derives every key from groupKey', async () => {
    const { fake, run } = setup();
    fake.onPoll = () => ['a', 'b'].forEach((k) => fake.finish(k, 'SUCCEEDED', k));
    const parentScopeId = randomUUID();
    const result = await run({ condition: 'N_ACCEPTED', threshold: 2, parentScopeId, deadline: '2026-01-01T01:00:00.000Z', members: members('a', 'b') });

    const [body, createOptions] = fake.calls[0]!.args as [unknown, CallOptions];
    expect(body).toEqual({ mailboxId, condition: 'N_ACCEPTED', threshold: 2, expectedMembers: 2, parentScopeId, deadline: '2026-01-01T01:00:00.000Z' });
    expect(createOptions.idempotencyKey).toBe('task-group:run-7');
    const creates = fake.calls.filter((c) => c.op === 'createMemberTask').map((c) => [c.args[1], (c.args[2] as CallOptions).idempotencyKey]);
    expect(creates).toEqual([
      [{ taskKey: 'run-7:a', input: { key: 'a' } }, 'task-group:run-7:member:a'],
      [{ taskKey: 'run-7:b', input: { key: 'b' } }, 'task-group:run-7:member:b'],
    ]);
    expect(result.groupKey).toBe('run-7');
    expect(result.members).toEqual([
      { key: 'a', taskKey: 'run-7:a', taskId: fake.task('a').id },
      { key: 'b', taskKey: 'run-7:b', taskId: fake.task('b').id },
    ]);
    expect(result.group).toMatchObject({ state: 'DECIDED', outcome: 'SUCCEEDED', outcomeReason: 'THRESHOLD_MET' });
  });

  it('refuses a plan the server would cut short, before any call', async () => {
    const { fake, run } = setup();
    await expect(run({ condition: 'ALL_TERMINAL', members: [] })).rejects.toThrow(RangeError);
    await expect(run({ condition: 'ALL_TERMINAL', members: members('a', 'a') })).rejects.toThrow(/unique/);
    await expect(run({ condition: 'ALL_TERMINAL', expectedMembers: 1, members: members('a', 'b') })).rejects.toThrow(/expectedMembers/);
    await expect(run({ condition: 'ALL_TERMINAL', members: [{ key: 'x'.repeat(510) }] })).rejects.toThrow(/taskKey/);
    expect(fake.calls).toEqual([]);
  });

  it('stops the fan-out when the group closed membership first, finding who joined in the gate scope', async () => {
    const { fake, run, clock } = setup();
    // The group decides (its deadline passed) between the first and the second member's create.
    const create = fake.createMemberTask.bind(fake);
    fake.createMemberTask = async (groupId, body, o) => {
      if (body.taskKey === 'run-7:b') Object.assign(fake.group!, { state: 'DECIDED', outcome: 'FAILED', outcomeReason: 'DEADLINE_EXCEEDED', decidedAt: clock.now() });
      return create(groupId, body, o);
    };
    const result = await run({ condition: 'ALL_TERMINAL', members: members('a', 'b', 'c') });
    expect(result.members.map((m) => [m.key, m.taskId])).toEqual([
      ['a', fake.task('a').id],
      ['b', null],
      ['c', null],
    ]);
    expect(fake.ops('listTasks')).toHaveLength(1);
    expect(result.group).toMatchObject({ outcome: 'FAILED', outcomeReason: 'DEADLINE_EXCEEDED' });
  });

  it('rethrows a CONFLICT on a member create while the group is still OPEN', async () => {
    const { fake, run } = setup();
    fake.createMemberTask = async () => {
      throw conflict('taskKey names a task that is not a member of this group');
    };
    await expect(run({ condition: 'ALL_TERMINAL', members: members('a') })).rejects.toMatchObject({ code: 'CONFLICT' });
  });
});

describe('runGroup: the verifier', () => {
  it('FIRST_ACCEPTED: rejects the first outcome, accepts the second; the decision cancels the third', async () => {
    const { fake, run, asked, verifier } = setup();
    fake.onPoll = (poll) => {
      if (poll === 1) fake.finish('a', 'SUCCEEDED', { answer: 41 });
      if (poll === 2) fake.finish('b', 'SUCCEEDED', { answer: 42 });
    };
    const result = await run({ condition: 'FIRST_ACCEPTED', members: members('a', 'b', 'c'), verify: verifier({ a: 'REJECT', b: 'ACCEPT' }) });

    expect(asked).toEqual([
      { taskId: fake.task('a').id, taskKey: 'run-7:a', key: 'a', taskState: 'SUCCEEDED', outcome: { answer: 41 } },
      { taskId: fake.task('b').id, taskKey: 'run-7:b', key: 'b', taskState: 'SUCCEEDED', outcome: { answer: 42 } },
    ]);
    expect(result.group).toMatchObject({ state: 'DECIDED', outcome: 'SUCCEEDED', outcomeReason: 'THRESHOLD_MET' });
    expect(result.group.members.map((m) => [m.taskState, m.verdict])).toEqual([
      ['SUCCEEDED', 'REJECTED'],
      ['SUCCEEDED', 'ACCEPTED'],
      ['CANCELLED', 'PENDING'],
    ]);
    expect(result.accepted).toEqual([asked[1]]);
    // The accepted outcome came from the read made for the verifier: one getTask per member.
    expect(fake.ops('getTask')).toHaveLength(2);
  });

  it('accepts every SUCCEEDED member without a verifier', async () => {
    const { fake, run } = setup();
    fake.onPoll = () => ['a', 'b', 'c'].forEach((k, i) => fake.finish(k, 'SUCCEEDED', i));
    const result = await run({ condition: 'N_ACCEPTED', threshold: 2, members: members('a', 'b', 'c') });
    expect(result.accepted.map((m) => [m.key, m.outcome])).toEqual([
      ['a', 0],
      ['b', 1],
    ]);
    // Decided at the second accept: the third was not judged.
    expect(fake.ops('acceptMember')).toHaveLength(2);
    expect(result.group.members[2]!.verdict).toBe('PENDING');
  });

  it('rejects FAILED, EXPIRED and CANCELLED members without asking, down to THRESHOLD_UNREACHABLE', async () => {
    const { fake, run, asked, verifier } = setup();
    fake.onPoll = (poll) => {
      if (poll === 1) ['a', 'b', 'c'].forEach((k, i) => fake.finish(k, (['FAILED', 'EXPIRED', 'CANCELLED'] as const)[i]!));
      if (poll === 2) fake.finish('d', 'SUCCEEDED', 'not good enough');
    };
    const result = await run({ condition: 'FIRST_ACCEPTED', members: members('a', 'b', 'c', 'd'), verify: verifier({ d: 'REJECT' }) });
    expect(asked.map((m) => m.key)).toEqual(['d']);
    expect(fake.ops().filter((op) => op.endsWith('Member'))).toEqual(['rejectMember', 'rejectMember', 'rejectMember', 'rejectMember']);
    expect(result.group).toMatchObject({ outcome: 'FAILED', outcomeReason: 'THRESHOLD_UNREACHABLE' });
    expect(result.accepted).toEqual([]);
  });

  it('gives the verdicts of members that ended before a threshold decision, not asking about the failed ones', async () => {
    const { fake, run, asked, verifier } = setup();
    fake.onPoll = (poll) => {
      if (poll === 1) fake.finish('a', 'FAILED');
      if (poll === 2) fake.finish('b', 'SUCCEEDED', 'b');
    };
    const result = await run({ condition: 'FIRST_ACCEPTED', members: members('a', 'b'), verify: verifier({ b: 'ACCEPT' }) });
    expect(asked.map((m) => m.key)).toEqual(['b']);
    expect(fake.ops().filter((op) => op.endsWith('Member'))).toEqual(['rejectMember', 'acceptMember']);
    expect(result.group.members.map((m) => m.verdict)).toEqual(['REJECTED', 'ACCEPTED']);
  });

  it('ALL_TERMINAL: gives the verdicts still owed after the decision, so `accepted` covers every member', async () => {
    const { fake, run, asked, verifier } = setup();
    // All three end before the helper looks: the last end decides the group.
    fake.onPoll = () => {
      fake.finish('a', 'SUCCEEDED', 'a');
      fake.finish('b', 'FAILED');
      fake.finish('c', 'SUCCEEDED', 'c');
    };
    const result = await run({ condition: 'ALL_TERMINAL', members: members('a', 'b', 'c'), verify: verifier({ a: 'ACCEPT', c: 'REJECT' }) });
    expect(result.group).toMatchObject({ outcome: 'SUCCEEDED', outcomeReason: 'ALL_TERMINAL' });
    expect(asked.map((m) => m.key)).toEqual(['a', 'c']);
    expect(result.group.members.map((m) => m.verdict)).toEqual(['ACCEPTED', 'REJECTED', 'REJECTED']);
    expect(result.accepted.map((m) => m.key)).toEqual(['a']);
  });

  it('stops with the error of a verifier that throws, giving no verdict', async () => {
    const { fake, run } = setup();
    fake.onPoll = () => fake.finish('a', 'SUCCEEDED');
    const failure = new Error('judge unavailable');
    await expect(run({ condition: 'FIRST_ACCEPTED', members: members('a'), verify: () => Promise.reject(failure) })).rejects.toBe(failure);
    expect(fake.ops('acceptMember')).toEqual([]);
  });

  it('refuses a verifier answer that is neither ACCEPT nor REJECT', async () => {
    const { fake, run } = setup();
    fake.onPoll = () => fake.finish('a', 'SUCCEEDED');
    await expect(run({ condition: 'FIRST_ACCEPTED', members: members('a'), verify: () => 'YES' as MemberVerdict })).rejects.toThrow(TypeError);
  });
});

describe('runGroup: races and restarts', () => {
  it('takes a 409 on a verdict that raced another coordinator as the group answers it', async () => {
    const { fake, run, verifier } = setup();
    fake.onPoll = () => ['a', 'b'].forEach((k) => fake.finish(k, 'SUCCEEDED', k));
    // Another coordinator rejects `a` and accepts `b` (deciding the group) just before our verdict on `a`.
    fake.beforeVerdict = (taskId) => {
      if (taskId !== fake.task('a').id || fake.task('a').verdict !== 'PENDING') return;
      fake.task('a').verdict = 'REJECTED';
      fake.task('b').verdict = 'ACCEPTED';
      Object.assign(fake.group!, { state: 'DECIDED', outcome: 'SUCCEEDED', outcomeReason: 'THRESHOLD_MET', decidedAt: 0 });
    };
    const result = await run({ condition: 'FIRST_ACCEPTED', members: members('a', 'b'), verify: verifier({ a: 'ACCEPT', b: 'ACCEPT' }) });
    expect(fake.ops().filter((op) => op.endsWith('Member'))).toEqual(['acceptMember']);
    expect(result.group).toMatchObject({ state: 'DECIDED', outcome: 'SUCCEEDED' });
    expect(result.accepted.map((m) => m.key)).toEqual(['b']);
  });

  it('rethrows a verdict conflict that the group does not explain', async () => {
    const { fake, run } = setup();
    fake.onPoll = () => fake.finish('a', 'SUCCEEDED');
    fake.acceptMember = async () => {
      throw conflict('member is RUNNING');
    };
    await expect(run({ condition: 'FIRST_ACCEPTED', members: members('a') })).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('a rerun with the same groupKey finds the same group and members, and asks nothing already judged', async () => {
    const { fake, run, asked, verifier } = setup();
    fake.onPoll = () => ['a', 'b'].forEach((k) => fake.finish(k, 'SUCCEEDED', k));
    const options = { condition: 'ALL_TERMINAL' as const, members: members('a', 'b'), verify: verifier({ a: 'ACCEPT', b: 'REJECT' }) };
    const first = await run(options);
    const again = await run(options);
    expect(again.group.id).toBe(first.group.id);
    expect(fake.tasks).toHaveLength(2);
    expect(again.members).toEqual(first.members);
    expect(asked.map((m) => m.key)).toEqual(['a', 'b']);
    expect(again.accepted).toEqual(first.accepted);
  });

  it('resumes a run that stopped after asking, before its verdict: the member is asked again', async () => {
    const { fake, run, verifier } = setup();
    fake.onPoll = () => fake.finish('a', 'SUCCEEDED', 'a');
    const options = { condition: 'FIRST_ACCEPTED' as const, members: members('a') };
    const abort = new AbortController();
    await expect(run({ ...options, signal: abort.signal, verify: () => (abort.abort(new Error('crash')), 'ACCEPT') })).rejects.toThrow('crash');
    expect(fake.ops('acceptMember')).toEqual([]);
    const result = await run({ ...options, verify: verifier({ a: 'ACCEPT' }) });
    expect(result.accepted.map((m) => m.key)).toEqual(['a']);
  });
});

describe('runGroup: waiting', () => {
  it('long-polls with a wait doubling while nothing moves and dropping back when a member ends', async () => {
    const { fake, run } = setup();
    fake.onPoll = (poll) => {
      if (poll === 4) fake.finish('a', 'FAILED');
      if (poll === 6) fake.finish('b', 'SUCCEEDED', 'b');
    };
    await run({ condition: 'FIRST_ACCEPTED', members: members('a', 'b'), poll: { minWaitMs: 100, maxWaitMs: 500 } });
    expect(fake.polls).toEqual([100, 200, 400, 500, 100, 200]);
  });

  it('waits out on the clock a server that answers before the wait', async () => {
    const { fake, run, clock } = setup();
    fake.onPoll = (poll) => {
      if (poll === 3) fake.finish('a', 'SUCCEEDED');
    };
    const startMs = clock.now();
    await run({ condition: 'FIRST_ACCEPTED', members: members('a'), poll: { minWaitMs: 100, maxWaitMs: 1_000 } });
    // The fake answers at once: the first two polls were slept out, the third saw the member end.
    expect(clock.slept).toEqual([100, 200]);
    expect(clock.now() - startMs).toBe(300);
  });

  it('times out on the clock, never asking the server to wait past the timeout', async () => {
    const { fake, run } = setup();
    const error = await run({ condition: 'FIRST_ACCEPTED', members: members('a'), timeoutMs: 1_000, poll: { minWaitMs: 300, maxWaitMs: 5_000 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect(error).toMatchObject({ timeoutMs: 1_000 });
    expect(fake.polls).toEqual([300, 600, 100]);
    expect(fake.group!.state).toBe('SEALED'); // the group runs on
  });

  it('stops waiting when the signal aborts, rejecting with its reason', async () => {
    const { fake, run } = setup();
    const abort = new AbortController();
    const reason = new Error('coordinator stopping');
    fake.onPoll = (poll) => {
      if (poll === 2) abort.abort(reason);
    };
    await expect(run({ condition: 'FIRST_ACCEPTED', members: members('a'), signal: abort.signal })).rejects.toBe(reason);
    expect(fake.polls).toHaveLength(2);
  });
});
