import { assert } from '../assert';
import type { OpContext } from '../context';
import { BatonError, conflict, notFound } from '../errors';
import { eventTypes, type NewEvent } from '../events/model';
import { mailboxOf, sendTargetOf } from '../messages/service';
import { decodePositionCursor, encodePositionCursor } from '../paging';
import type { Random } from '../random';
import type { GroupCreateBody, GroupCreatedReply, GroupListQuery, GroupView, JoinTaskBody, MemberTaskBody, MemberTaskReply, VerdictReply } from '../schemas/groups';
import type { Page } from '../store/page';
import type { Tx } from '../store/store';
import type { Task } from '../tasks/model';
import { taskFingerprint } from '../tasks/rules';
import { cancelForGroup, createTask } from '../tasks/service';
import { defaultSpaceLimits } from '../tenancy/space-limits';
import { isTerminalTask } from '../tasks/model';
import { isoFromMs, msFromIso } from '../time';
import type { GroupDecision, GroupMember, MemberRow, SealCause, TaskGroup, Verdict } from './model';
import { checkVerdict, decide, membershipCap } from './rules';
import { groupView } from './views';
import { governingRun, refuseIfEnded, requireOpenScope } from '../runs/guard';
import { together } from '../store/together';

/**
 * Task groups (docs/design/0010-task-groups.md). Every operation that can change a group's decision locks the
 * group row first among the group's rows and evaluates the rule before it commits: a member
 * joining, a verdict, a close or seal, a member task reaching a terminal state (the task hooks
 * call onMemberEnded), and the deadline (the sweep, or any of these finding it passed). One
 * transaction at a time holds the lock, so the outcome is set exactly once, in the transaction
 * whose change made the condition met or unreachable. Lock order: docs/lock-order.md.
 */

const groupEvent = (g: Pick<TaskGroup, 'id' | 'scopeId'>, type: string, data: Record<string, unknown> = {}): NewEvent => ({
  type,
  aggregateType: 'group',
  aggregateId: g.id,
  scopeId: g.scopeId,
  data: { groupId: g.id, ...data },
});

/** Creates an OPEN group with a fresh gate scope, a child of parentScopeId when given. */
export async function createGroup(ctx: OpContext, body: GroupCreateBody): Promise<GroupCreatedReply> {
  // A group under an ended run is new work under it (docs/design/0019-runs.md); its gate scope belongs to that run.
  if (body.parentScopeId !== undefined) await requireOpenScope(ctx, body.parentScopeId);
  await mailboxOf(ctx.tx, ctx.spaceId, body.mailboxId);
  const group: TaskGroup = {
    id: ctx.random.uuid(),
    spaceId: ctx.spaceId,
    scopeId: ctx.random.uuid(),
    parentScopeId: body.parentScopeId ?? null,
    mailboxId: body.mailboxId,
    condition: body.condition,
    threshold: body.condition === 'ALL_TERMINAL' ? null : body.condition === 'FIRST_ACCEPTED' ? 1 : body.threshold!,
    expectedMembers: body.expectedMembers ?? null,
    deadline: body.deadline === undefined ? null : msFromIso(body.deadline),
    state: 'OPEN',
    outcome: null,
    outcomeReason: null,
    memberCount: 0,
    decidedAt: null,
    createdAt: ctx.nowMs,
    updatedAt: ctx.nowMs,
  };
  await ctx.tx.taskGroups.insert(group);
  const events = [
    groupEvent(group, eventTypes.groupCreated, {
      condition: group.condition,
      threshold: group.threshold,
      expectedMembers: group.expectedMembers,
      mailboxId: group.mailboxId,
      parentScopeId: group.parentScopeId,
      deadline: body.deadline ?? null,
    }),
  ];
  // A deadline already passed decides at once: nothing waits for the sweep.
  await evaluate(ctx, group, events);
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, events);
  return { groupId: group.id, scopeId: group.scopeId };
}

export async function getGroup(tx: Tx, spaceId: string, id: string): Promise<GroupView> {
  const group = await tx.taskGroups.get(spaceId, id);
  if (!group) throw notFound('task group');
  return viewOf(tx, group);
}

/** Groups oldest first (createdAt, then id), optionally filtered by state. */
export async function listGroups(tx: Tx, spaceId: string, query: GroupListQuery): Promise<Page<GroupView>> {
  const after = query.cursor === undefined ? null : decodePositionCursor(query.cursor);
  const rows = await tx.taskGroups.list(spaceId, query.state ?? null, after, query.limit + 1);
  const page = rows.slice(0, query.limit);
  const members = await tx.taskGroups.listMembersOf(spaceId, page.map((g) => g.id));
  const items = page.map((g) => groupView(g, members.filter((m) => m.groupId === g.id)));
  return { items, nextCursor: rows.length > query.limit ? encodePositionCursor(page.at(-1)!) : null };
}

async function viewOf(tx: Tx, group: TaskGroup): Promise<GroupView> {
  return groupView(group, await tx.taskGroups.listMembers(group.spaceId, group.id));
}

/**
 * Creates a member task in the group's mailbox and gate scope. Create-or-join by taskKey: a key
 * whose task is already a member of this group answers it (created: false), also once the group
 * is no longer OPEN; one naming another task is TASK_KEY_CONFLICT (other fingerprint) or
 * CONFLICT (join-task joins outside tasks).
 */
export async function createMemberTask(ctx: OpContext, id: string, body: MemberTaskBody): Promise<{ created: boolean; reply: MemberTaskReply }> {
  const events: NewEvent[] = [];
  // A key naming a member of this group answers it whatever the group's state, as join-task
  // does: a coordinator retrying the create of the member that closed membership gets 200, not
  // 409. (A membership is never undone, so this unlocked read stays true under the lock.)
  const [known, unlocked] = await together(ctx.tx.tasks.getByKey(ctx.spaceId, body.taskKey), ctx.tx.taskGroups.get(ctx.spaceId, id));
  // The gate scope's run before the group: a run's lock comes first (docs/lock-order.md). An
  // ended run refuses even a repeat of a member's create: nothing more is done under it.
  const [run, locked] = await together(unlocked === undefined ? Promise.resolve(undefined) : governingRun(ctx, unlocked.scopeId), lockGroup(ctx, id));
  refuseIfEnded(run, locked.scopeId);
  const group = await openGroup(ctx, locked, events, known?.groupId === id ? known.id : undefined);
  const input = body.input ?? null;
  const requirements = { pools: [], quotas: [], budgets: [] };
  const fingerprint = taskFingerprint(group.mailboxId, input, requirements, null);
  const existing = await ctx.tx.tasks.getByKey(ctx.spaceId, body.taskKey);
  if (existing) {
    const reply = existingMember(group, existing, fingerprint);
    // A deadline openGroup applied (the decision and its cancellations) commits with the reply.
    await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, events);
    return { created: false, reply };
  }
  const task = await createTask(ctx, await sendTargetOf(ctx, group.mailboxId), { taskKey: body.taskKey, scopeId: group.scopeId, input, requirements, workLimit: null, deadline: body.deadline, fingerprint }, null);
  await join(ctx, group, task, 'CREATED', events);
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, events);
  return { created: true, reply: { taskId: task.id, state: task.state, created: true } };
}

function existingMember(group: TaskGroup, task: Task, fingerprint: string): MemberTaskReply {
  if (task.fingerprint !== fingerprint) throw new BatonError('TASK_KEY_CONFLICT', `taskKey ${task.taskKey} was submitted with another mailboxId, input, requirements or workLimit`);
  if (task.groupId !== group.id) throw conflict(`taskKey ${task.taskKey} names task ${task.id}, which is not a member of this group; POST /task-groups/${group.id}/join-task joins a task that is in no group`);
  return { taskId: task.id, state: task.state, created: false };
}

/** Joins an outside task (of this space, a member of no group) to an OPEN group; a member of this group answers as it is. */
export async function joinTask(ctx: OpContext, id: string, body: JoinTaskBody): Promise<GroupView> {
  const events: NewEvent[] = [];
  const group = await lockOpenGroup(ctx, id, events, body.taskId);
  // Locked, so the state the join records and the rule counts is the task's committed one: a
  // complete racing the join either ended before this read or waits for this transaction; one
  // that read the task before this join committed finds its group_id changed when it writes and
  // runs again, so it tells the group (the store's task update, docs/lock-order.md). NOWAIT
  // because a task's end locks its task before its group, the reverse of this order: a busy task
  // fails this transaction at once and the store runs it again (docs/lock-order.md).
  const task = await ctx.tx.tasks.get(ctx.spaceId, body.taskId, { forUpdate: true, noWait: true });
  if (!task) throw notFound('task');
  if (task.groupId !== group.id) {
    if (task.groupId !== null) throw conflict(`task ${task.id} is a member of task group ${task.groupId}; a task joins one group at most`);
    await join(ctx, group, task, 'JOINED', events);
  }
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, events);
  return getGroup(ctx.tx, ctx.spaceId, id);
}

/**
 * Locks the group and applies a passed deadline; CONFLICT unless it is still OPEN. `memberId`:
 * a task already a member of this group answers as it is, whatever the group's state (join-task
 * is idempotent). A refusal rolls back a deadline applied here; the next call or the sweep
 * applies it again, with the same outcome.
 */
async function lockOpenGroup(ctx: OpContext, id: string, events: NewEvent[], memberId?: string): Promise<TaskGroup> {
  return openGroup(ctx, await lockGroup(ctx, id), events, memberId);
}

/** lockOpenGroup on a group already locked. */
async function openGroup(ctx: OpContext, locked: TaskGroup, events: NewEvent[], memberId?: string): Promise<TaskGroup> {
  const id = locked.id;
  const group = await applyDeadline(ctx, locked, events);
  if (group.state === 'OPEN') return group;
  if (memberId !== undefined && (await ctx.tx.taskGroups.getMember(ctx.spaceId, id, memberId))) return group;
  throw conflict(`task group ${id} is ${group.state}: membership is closed`);
}

/** Adds `task` as the next member; membership closes once it reaches the cap; then the rule runs. */
async function join(ctx: OpContext, group: TaskGroup, task: Task, how: 'CREATED' | 'JOINED', events: NewEvent[]): Promise<void> {
  assert(group.state === 'OPEN' && group.memberCount < membershipCap(group), `join to ${group.state} group ${group.id} of ${group.memberCount}`);
  const member: GroupMember = { spaceId: ctx.spaceId, groupId: group.id, taskId: task.id, position: group.memberCount + 1, verdict: 'PENDING', joinedAt: ctx.nowMs, verdictAt: null };
  if (!(await ctx.tx.taskGroups.addMember(member))) throw conflict(`task ${task.id} joined another task group meanwhile`);
  let next: TaskGroup = { ...group, memberCount: member.position, updatedAt: ctx.nowMs };
  events.push(groupEvent(next, eventTypes.groupMemberAdded, { taskId: task.id, position: member.position, how, taskState: task.state }));
  if (next.memberCount === membershipCap(next)) next = sealed(next, next.expectedMembers === null ? 'MAX_MEMBERS' : 'EXPECTED_MEMBERS', ctx.nowMs, events);
  await ctx.tx.taskGroups.update(next);
  await evaluate(ctx, next, events);
}

function sealed(group: TaskGroup, cause: SealCause, nowMs: number, events: NewEvent[]): TaskGroup {
  assert(group.state === 'OPEN', `seal of ${group.state} group ${group.id}`);
  const next: TaskGroup = { ...group, state: 'SEALED', updatedAt: nowMs };
  events.push(groupEvent(next, eventTypes.groupSealed, { cause, members: next.memberCount }));
  return next;
}

/**
 * A verdict on a member (accept needs a SUCCEEDED task, reject a terminal one). The same verdict
 * again changes nothing; a verdict is final. A verdict on a DECIDED group is recorded but never
 * moves the outcome, which is set once.
 */
export async function giveVerdict(ctx: OpContext, id: string, taskId: string, verdict: Exclude<Verdict, 'PENDING'>): Promise<VerdictReply> {
  const events: NewEvent[] = [];
  const group = await applyDeadline(ctx, await lockGroup(ctx, id), events);
  const member = await ctx.tx.taskGroups.getMember(ctx.spaceId, id, taskId);
  if (!member) throw notFound(`member task ${taskId} of task group ${id}`);
  if (checkVerdict(member.verdict, verdict, taskId, member.taskState)) {
    await ctx.tx.taskGroups.setVerdict(ctx.spaceId, id, taskId, verdict, ctx.nowMs);
    events.push(groupEvent(group, eventTypes.groupVerdict, { taskId, verdict, taskState: member.taskState, groupState: group.state }));
    await evaluate(ctx, group, events);
  }
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, events);
  return { taskId, verdict, group: await getGroup(ctx.tx, ctx.spaceId, id) };
}

/**
 * Closes membership (SEALED) and decides at once if the rule can. close repeats harmlessly and
 * answers the committed state; seal on a group that is not OPEN is CONFLICT (docs/api.md "Versioning").
 */
export async function close(ctx: OpContext, id: string, how: 'CLOSE' | 'SEAL'): Promise<GroupView> {
  const locked = await lockGroup(ctx, id);
  if (how === 'SEAL' && locked.state !== 'OPEN') throw conflict(`task group ${id} is ${locked.state}; seal closes an OPEN group only (close answers the committed outcome)`);
  const events: NewEvent[] = [];
  const group = await applyDeadline(ctx, locked, events);
  if (group.state === 'OPEN') {
    const next = sealed(group, how, ctx.nowMs, events);
    await ctx.tx.taskGroups.update(next);
    await evaluate(ctx, next, events);
  }
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, events);
  return getGroup(ctx.tx, ctx.spaceId, id);
}

/** The group row, locked: the lock every change to a group's decision takes (docs/lock-order.md). */
async function lockGroup(ctx: OpContext, id: string): Promise<TaskGroup> {
  const group = await ctx.tx.taskGroups.get(ctx.spaceId, id, { forUpdate: true });
  if (!group) throw notFound('task group');
  return group;
}

/** A deadline that passed before this call decides the locked group first: it came before whatever the call does. */
async function applyDeadline(ctx: OpContext, group: TaskGroup, events: NewEvent[]): Promise<TaskGroup> {
  const due = group.state !== 'DECIDED' && group.deadline !== null && ctx.nowMs >= group.deadline;
  return due ? evaluate(ctx, group, events) : group;
}

/**
 * Runs the decision rule on the locked group with its members as they are now (this
 * transaction's own writes included) and, when it decides, applies the decision: the outcome is
 * written once and every member still live is cancelled, all in this transaction. Answers the
 * group as it now is.
 */
async function evaluate(ctx: OpContext, group: TaskGroup, events: NewEvent[]): Promise<TaskGroup> {
  if (group.state === 'DECIDED') return group;
  const members = await ctx.tx.taskGroups.listMembers(ctx.spaceId, group.id);
  const decision = decide(group, members, ctx.nowMs);
  if (!decision) return group;
  return decided(ctx, group, members, decision, events);
}

async function decided(ctx: OpContext, group: TaskGroup, members: readonly MemberRow[], decision: GroupDecision, events: NewEvent[]): Promise<TaskGroup> {
  const next: TaskGroup = { ...group, state: 'DECIDED', outcome: decision.outcome, outcomeReason: decision.outcomeReason, decidedAt: ctx.nowMs, updatedAt: ctx.nowMs };
  await ctx.tx.taskGroups.update(next);
  const count = (match: (m: MemberRow) => boolean): number => members.filter(match).length;
  events.push(
    groupEvent(next, eventTypes.groupDecided, {
      outcome: decision.outcome,
      outcomeReason: decision.outcomeReason,
      from: group.state,
      members: members.length,
      accepted: count((m) => m.verdict === 'ACCEPTED'),
      rejected: count((m) => m.verdict === 'REJECTED'),
      terminal: count((m) => isTerminalTask(m.taskState)),
      succeeded: count((m) => m.taskState === 'SUCCEEDED'),
    }),
  );
  for (const m of members) if (!isTerminalTask(m.taskState)) events.push(...(await cancelForGroup(ctx, m.taskId)));
  return next;
}

// ---------------------------------------------------------------------------------------------
// Hooks and sweeps

/**
 * A member task reached a terminal state (a task hook, in the transaction that moved it, after
 * the task in the lock order): the group may now be decided. Its events, for the caller to
 * append with its own.
 */
export async function onMemberEnded(ctx: OpContext, task: Task): Promise<NewEvent[]> {
  assert(task.groupId !== null && isTerminalTask(task.state), `onMemberEnded for ${task.state} task ${task.id} of group ${task.groupId}`);
  const events: NewEvent[] = [];
  await evaluate(ctx, await lockGroup(ctx, task.groupId), events);
  return events;
}

/** The deadline sweep: undecided groups whose deadline passed decide FAILED DEADLINE_EXCEEDED. */
export async function expireDeadlines(tx: Tx, nowMs: number, limit: number, random: Random): Promise<number> {
  const due = await tx.taskGroups.claimDeadlinePassed(nowMs, limit);
  for (const group of due) {
    const ctx: OpContext = { tx, spaceId: group.spaceId, nowMs, random, limits: defaultSpaceLimits };
    const events: NewEvent[] = [];
    const next = await evaluate(ctx, group, events);
    assert(next.state === 'DECIDED', `group ${group.id}: deadline ${isoFromMs(group.deadline!)} passed at ${isoFromMs(nowMs)} but not decided`);
    await tx.events.append(group.spaceId, nowMs, events);
  }
  return due.length;
}
