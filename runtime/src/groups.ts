import { createHash, randomUUID } from 'node:crypto';
import type { schemas } from '@baton/core';
import type { GroupView, In, Out, TaskGroupApi } from './contract';
import { systemClock, type RuntimeClock } from './clock';
import { hasCode } from './errors';
import { WaitTimeoutError } from './helpers';

/**
 * Task groups from the coordinator's side (docs/design/0010-task-groups.md): create a group, fan out its member
 * tasks, give each member that ends a verdict, and wait for the decision. Built on TaskGroupApi
 * alone (contract.ts), so it runs against the client, the simulator or an in-memory fake.
 */

type GroupCondition = GroupView['condition'];
type GroupMember = GroupView['members'][number];
type TaskState = GroupMember['taskState'];
type TaskView = Out<typeof schemas.taskView>;

/** The server's longest long poll (GET /task-groups/{id}?waitMs=): longer waits are cut to it. */
const serverLongPollCapMs = 30_000;
/** The server's bound on a taskKey. */
const maxTaskKeyLength = 512;

const terminalStates: ReadonlySet<TaskState> = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED', 'EXPIRED']);
const isTerminal = (state: TaskState): boolean => terminalStates.has(state);

export interface GroupMemberSpec<I = unknown> {
  /** Names the member within the run: its taskKey is `<groupKey>:<key>`. */
  key: string;
  input?: I;
  /** The member task's own deadline (ISO 8601). */
  deadline?: string;
}

/** A member that ended, as the verifier sees it (and as `accepted` lists it); `O` is its outcome's type. */
export interface EndedMember<O = unknown> {
  taskId: string;
  taskKey: string;
  /** The `key` it was fanned out with; null for a task that joined the group another way. */
  key: string | null;
  taskState: TaskState;
  /** What the worker completed the task with (GET /tasks/{id} `outcome`): null when it returned nothing or the task did not succeed. */
  outcome: O | null;
}

export type MemberVerdict = 'ACCEPT' | 'REJECT';
/** Judges a SUCCEEDED member's outcome. Throwing stops the run with that error (no verdict is given). */
export type MemberVerifier<O = unknown> = (member: EndedMember<O>) => MemberVerdict | Promise<MemberVerdict>;

/** `I` is the members' input and `O` their outcome, the caller's word for both. */
export interface RunGroupOptions<I = unknown, O = unknown> {
  /**
   * Names this run: the create's Idempotency-Key, each member's taskKey and the member creates'
   * Idempotency-Keys derive from it, so a rerun with the same groupKey (and the same options)
   * finds the same group and members instead of making new ones. Default: a fresh UUID (a run
   * that cannot be resumed).
   */
  groupKey?: string;
  mailboxId: string;
  /** A worker admitting on this scope also receives the members (they run in the group's gate scope, its child). */
  parentScopeId?: string;
  condition: GroupCondition;
  /** Required for N_ACCEPTED; 1 or absent for FIRST_ACCEPTED; absent for ALL_TERMINAL. */
  threshold?: number;
  /** Default: the number of members, so membership closes once the last one joined. */
  expectedMembers?: number;
  /** ISO 8601. Give the same value on a rerun: the create's body is part of its idempotency. */
  deadline?: string;
  // NoInfer: members of different shapes would otherwise fix I to the first one's; give I explicitly to check them.
  members: readonly GroupMemberSpec<NoInfer<I>>[];
  /** Default: accept every SUCCEEDED member. */
  verify?: MemberVerifier<O>;
  /** Stop waiting after this long (WaitTimeoutError); the group runs on. Default: no limit. */
  timeoutMs?: number;
  /** Stops waiting (rejects with its reason); the group runs on. */
  signal?: AbortSignal;
  clock?: RuntimeClock;
  /** The long poll's wait per round: from minWaitMs, doubling while nothing moves, up to maxWaitMs. Default 30,000 (the server's cap) both. */
  poll?: { minWaitMs?: number; maxWaitMs?: number };
}

export interface FannedOutMember {
  key: string;
  taskKey: string;
  /** Null when the group stopped taking members (it decided early) before this one joined. */
  taskId: string | null;
}

export interface GroupRun<O = unknown> {
  groupKey: string;
  /** The group, DECIDED. */
  group: GroupView;
  /** `options.members` in order, with their task ids. */
  members: FannedOutMember[];
  /** The ACCEPTED members with their outcomes, in join order. */
  accepted: EndedMember<O>[];
}

/**
 * Creates the group, fans out its members and waits for the decision, giving each member that
 * ends a verdict on the way: a SUCCEEDED member is put to `verify`; a FAILED, CANCELLED or
 * EXPIRED one is rejected without asking, since the server accepts only SUCCEEDED members (the
 * hook would have one legal answer) and there is no outcome to judge. The hook is asked at most
 * once per member in a run, and never about a member that already has a verdict (a rerun).
 *
 * For FIRST_ACCEPTED and N_ACCEPTED verdicts decide the group, so they stop with the decision;
 * members still running are cancelled by it (GROUP_DECIDED). ALL_TERMINAL decides when the last
 * member ends, whatever the verdicts: those still owed are given after the decision (the server
 * records them), so `accepted` covers every member.
 */
export async function runGroup<I = unknown, O = unknown>(client: TaskGroupApi, options: RunGroupOptions<I, O>): Promise<GroupRun<O>> {
  const plan = planOf(options as RunGroupOptions);
  const clock = options.clock ?? systemClock;
  const { signal } = options;
  const startedMs = clock.now();
  const created = await client.createGroup(plan.body, { signal, idempotencyKey: plan.createKey });
  const run: Run = {
    client,
    groupId: created.groupId,
    condition: options.condition,
    prefix: plan.prefix,
    clock,
    signal,
    timeoutMs: options.timeoutMs,
    endsAtMs: options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : startedMs + options.timeoutMs,
    // The caller's word for the outcomes' type is taken here, where they are handed to its verifier.
    verify: (options.verify as MemberVerifier | undefined) ?? acceptEverySucceeded,
    minWaitMs: options.poll?.minWaitMs ?? serverLongPollCapMs,
    maxWaitMs: Math.min(options.poll?.maxWaitMs ?? serverLongPollCapMs, serverLongPollCapMs),
    ended: new Map(),
    settled: new Set(),
  };
  const members = await fanOut(run, created.scopeId, plan);
  const group = await awaitDecision(run, await client.getGroup(run.groupId, 0, { signal }));
  return { groupKey: plan.groupKey, group, members, accepted: (await acceptedOf(run, group)) as EndedMember<O>[] };
}

const acceptEverySucceeded: MemberVerifier = () => 'ACCEPT';

// ---------------------------------------------------------------------------------------------
// The plan: validation, the create body and the derived keys

interface Plan {
  groupKey: string;
  prefix: string;
  body: In<typeof schemas.groupCreateBody>;
  createKey: string;
  members: { spec: GroupMemberSpec; taskKey: string; idempotencyKey: string }[];
}

function planOf(options: RunGroupOptions): Plan {
  const groupKey = options.groupKey ?? randomUUID();
  const prefix = `${groupKey}:`;
  const keys = options.members.map((m) => m.key);
  if (keys.length === 0) throw new RangeError('a task group run needs at least one member');
  if (new Set(keys).size !== keys.length) throw new RangeError('member keys must be unique within the run');
  const expectedMembers = options.expectedMembers ?? keys.length;
  // More members than that would be refused: membership closes once expectedMembers joined.
  if (expectedMembers < keys.length) throw new RangeError(`expectedMembers ${expectedMembers} is below the ${keys.length} members to fan out`);
  const members = options.members.map((spec) => {
    const taskKey = `${prefix}${spec.key}`;
    if (spec.key.length === 0 || taskKey.length > maxTaskKeyLength) throw new RangeError(`member taskKey "${taskKey}" must be 1 to ${maxTaskKeyLength} characters`);
    return { spec, taskKey, idempotencyKey: idempotencyKeyOf('task-group', groupKey, 'member', spec.key) };
  });
  const body: In<typeof schemas.groupCreateBody> = {
    mailboxId: options.mailboxId,
    condition: options.condition,
    expectedMembers,
    ...(options.threshold === undefined ? {} : { threshold: options.threshold }),
    ...(options.parentScopeId === undefined ? {} : { parentScopeId: options.parentScopeId }),
    ...(options.deadline === undefined ? {} : { deadline: options.deadline }),
  };
  return { groupKey, prefix, body, createKey: idempotencyKeyOf('task-group', groupKey), members };
}

/** An Idempotency-Key from its parts: readable when short, else a SHA-256 (the header takes at most 255 characters). */
function idempotencyKeyOf(...parts: string[]): string {
  const key = parts.join(':');
  return key.length <= 255 ? key : `sha256:${createHash('sha256').update(key).digest('hex')}`;
}

// ---------------------------------------------------------------------------------------------
// Fan-out

interface Run {
  client: TaskGroupApi;
  groupId: string;
  condition: GroupCondition;
  /** `<groupKey>:`, which maps a member's taskKey back to its key. */
  prefix: string;
  clock: RuntimeClock;
  signal: AbortSignal | undefined;
  timeoutMs: number | undefined;
  endsAtMs: number;
  verify: MemberVerifier;
  minWaitMs: number;
  maxWaitMs: number;
  /** SUCCEEDED members read so far (for the hook and `accepted`), by taskId. */
  ended: Map<string, EndedMember>;
  /** Members this run gave a verdict to (or tried to): none is handled twice. */
  settled: Set<string>;
}

/**
 * One member at a time, in the list's order: the server serializes member joins on the group's
 * lock anyway, and join order then matches the list. Each create is create-or-join by taskKey
 * under a derived Idempotency-Key, so a rerun is answered with the same tasks.
 */
async function fanOut(run: Run, gateScopeId: string, plan: Plan): Promise<FannedOutMember[]> {
  const members: FannedOutMember[] = [];
  for (const [index, m] of plan.members.entries()) {
    const body = { taskKey: m.taskKey, ...(m.spec.input === undefined ? {} : { input: m.spec.input }), ...(m.spec.deadline === undefined ? {} : { deadline: m.spec.deadline }) };
    try {
      const reply = await run.client.createMemberTask(run.groupId, body, { signal: run.signal, idempotencyKey: m.idempotencyKey });
      members.push({ key: m.spec.key, taskKey: m.taskKey, taskId: reply.taskId });
    } catch (error) {
      if (!hasCode(error, 'CONFLICT') || (await run.client.getGroup(run.groupId, 0, { signal: run.signal })).state === 'OPEN') throw error;
      // Membership closed first: the group decided early, or an earlier run filled it and its
      // replies are gone. Whichever of the rest joined is found in the gate scope by taskKey.
      return [...members, ...(await findJoined(run, gateScopeId, plan.members.slice(index)))];
    }
  }
  return members;
}

async function findJoined(run: Run, gateScopeId: string, rest: Plan['members']): Promise<FannedOutMember[]> {
  const idsByKey = new Map<string, string>();
  let cursor: string | undefined;
  do {
    const page = await run.client.listTasks({ scopeId: gateScopeId, limit: 500, ...(cursor === undefined ? {} : { cursor }) }, { signal: run.signal });
    for (const task of page.items) idsByKey.set(task.taskKey, task.id);
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return rest.map((m) => ({ key: m.spec.key, taskKey: m.taskKey, taskId: idsByKey.get(m.taskKey) ?? null }));
}

// ---------------------------------------------------------------------------------------------
// Waiting for the decision

/**
 * Rounds of one GET /task-groups/{id}?waitMs=, then verdicts for the members that ended. The
 * group view carries every member's taskState, so one request per round watches them all (a
 * getTask per member would cost N); the long poll answers as soon as the group decides or a
 * member ends, so both are seen without delay and the wait only sets how often an idle group
 * is asked again. The wait starts at minWaitMs, doubles while nothing moves and drops back when
 * a member joins or ends. A server that answers before the wait with nothing moved (one
 * draining) is waited out on the clock, so the loop never spins.
 */
async function awaitDecision(run: Run, first: GroupView): Promise<GroupView> {
  let view = first;
  let waitMs = run.minWaitMs;
  for (;;) {
    view = await settleEnded(run, view);
    if (view.state === 'DECIDED') return view;
    run.signal?.throwIfAborted();
    const leftMs = run.endsAtMs - run.clock.now();
    if (leftMs <= 0) throw new WaitTimeoutError(`decision of task group ${run.groupId}`, run.timeoutMs!);
    const askedMs = Math.max(0, Math.min(waitMs, leftMs, serverLongPollCapMs));
    const sentMs = run.clock.now();
    const next = await run.client.getGroup(run.groupId, askedMs, { signal: run.signal });
    const moved = membersMoved(view, next);
    waitMs = moved ? run.minWaitMs : Math.min(waitMs * 2, run.maxWaitMs);
    const earlyByMs = askedMs - (run.clock.now() - sentMs);
    if (next.state !== 'DECIDED' && !moved && earlyByMs > 0) await run.clock.sleep(earlyByMs, run.signal);
    view = next;
  }
}

/** A member joined or ended since the last view: worth looking again soon. */
function membersMoved(before: GroupView, after: GroupView): boolean {
  if (after.members.length !== before.members.length) return true;
  const endedBefore = new Set(before.members.filter((m) => isTerminal(m.taskState)).map((m) => m.taskId));
  return after.members.some((m) => isTerminal(m.taskState) && !endedBefore.has(m.taskId));
}

/**
 * Gives a verdict to each member that ended without one, in join order, taking the group as
 * each verdict's reply shows it. Stops at the decision, except for ALL_TERMINAL (see runGroup).
 */
async function settleEnded(run: Run, first: GroupView): Promise<GroupView> {
  let view = first;
  for (;;) {
    if (view.state === 'DECIDED' && run.condition !== 'ALL_TERMINAL') return view;
    const member = view.members.find((m) => m.verdict === 'PENDING' && isTerminal(m.taskState) && !run.settled.has(m.taskId));
    if (!member) return view;
    run.settled.add(member.taskId);
    const verdict = member.taskState === 'SUCCEEDED' ? await ask(run, member.taskId) : 'REJECT';
    view = await giveVerdict(run, member.taskId, verdict);
  }
}

async function ask(run: Run, taskId: string): Promise<MemberVerdict> {
  const member = await readEnded(run, taskId);
  const verdict = await run.verify(member);
  if (verdict !== 'ACCEPT' && verdict !== 'REJECT') throw new TypeError(`verify must answer 'ACCEPT' or 'REJECT', got ${String(verdict)} for member ${taskId}`);
  // The hook may have run long: an abort during it wins over the verdict.
  run.signal?.throwIfAborted();
  return verdict;
}

/**
 * Accept or reject; the reply carries the group. A 409 CONFLICT means something got there first:
 * another coordinator's verdict (a verdict is final) or a decision. The group as it is now says
 * which; when it explains nothing, the conflict is the caller's to see.
 */
async function giveVerdict(run: Run, taskId: string, verdict: MemberVerdict): Promise<GroupView> {
  try {
    const give = verdict === 'ACCEPT' ? run.client.acceptMember : run.client.rejectMember;
    return (await give.call(run.client, run.groupId, taskId, { signal: run.signal })).group;
  } catch (error) {
    if (!hasCode(error, 'CONFLICT')) throw error;
    const view = await run.client.getGroup(run.groupId, 0, { signal: run.signal });
    const member = view.members.find((m) => m.taskId === taskId);
    if (view.state === 'DECIDED' || (member !== undefined && member.verdict !== 'PENDING')) return view;
    throw error;
  }
}

async function readEnded(run: Run, taskId: string): Promise<EndedMember> {
  const known = run.ended.get(taskId);
  if (known) return known;
  const task: TaskView = await run.client.getTask(taskId, { signal: run.signal });
  const member: EndedMember = {
    taskId,
    taskKey: task.taskKey,
    key: task.taskKey.startsWith(run.prefix) ? task.taskKey.slice(run.prefix.length) : null,
    taskState: task.state,
    outcome: task.outcome,
  };
  run.ended.set(taskId, member);
  return member;
}

/** Accepted members with their outcomes; one read each for those an earlier run accepted. */
async function acceptedOf(run: Run, group: GroupView): Promise<EndedMember[]> {
  const accepted: EndedMember[] = [];
  for (const m of group.members) if (m.verdict === 'ACCEPTED') accepted.push(await readEnded(run, m.taskId));
  return accepted;
}
