import { assert } from '../assert';
import type { OpContext } from '../context';
import { BatonError, notFound, validationFailed } from '../errors';
import { eventView } from '../events/journal';
import { eventTypes, type NewEvent } from '../events/model';
import { cancelled } from '../messages/rules';
import { releaseResources } from '../admission/claims';
import type { ClaimedDelivery, LockedDelivery, Message, SendTarget } from '../messages/model';
import { groupDecidedReason } from '../groups/model';
import { insertSend, prepareSend } from '../messages/service';
import { messageView } from '../messages/views';
import type { TaskDebugView, TaskDetachBody, TaskDetachReply, TaskJoinBody, TaskListQuery, TaskStateReply, TaskSubmitBody, TaskSubmitReply, TaskView } from '../schemas/tasks';
import type { Page } from '../store/page';
import type { Tx } from '../store/store';
import { together } from '../store/together';
import { isoFromMs, msFromIso } from '../time';
import { isTerminalTask, type Task, type TaskListPosition, type TaskMove, type TaskRequirements, type TaskState } from './model';
import { assertTask, claimMove, movedWithDelivery, taskFingerprint } from './rules';
import { taskView } from './views';
import { claimedView } from '../admission/views';
import { hasRequirements, type DeliveryRequirements } from '../admission/model';
import { governingRun, refuseIfEnded } from '../runs/guard';
import type { Run } from '../runs/model';

/**
 * Tasks without admission (docs/design/0008-tasks-and-deliveries.md). A task's delivery is a message in its mailbox that
 * carries the taskId; the delivery lifecycle (core/src/deliveries/lifecycle.ts) calls the hooks
 * below inside its own transactions, so a claim, complete, nack or lease expiry moves the task in
 * the same transaction, and evaluates the task's group after it. Lock order (docs/lock-order.md):
 * the delivery message first, then the task row. This module imports no group code.
 */

const taskEvent = (t: Pick<Task, 'id' | 'scopeId'>, type: string, data: Record<string, unknown> = {}): NewEvent => ({
  type,
  aggregateType: 'task',
  aggregateId: t.id,
  scopeId: t.scopeId,
  data: { taskId: t.id, ...data },
});

export async function taskOf(tx: Tx, spaceId: string, id: string, lock = false): Promise<Task> {
  const task = await tx.tasks.get(spaceId, id, { forUpdate: lock });
  if (!task) throw notFound('task');
  return task;
}

async function viewOf(tx: Tx, task: Task): Promise<TaskView> {
  return taskView(task, await tx.tasks.listSubscribers(task.spaceId, task.id));
}

/**
 * Requirements are checked at submit: an unknown name is NOT_FOUND, units above a capacity or
 * limit VALIDATION_FAILED. Answers them resolved to ids in name order, as the delivery carries
 * them (core/src/admission/model.ts), or null when the task needs nothing.
 */
async function resolveRequirements(ctx: OpContext, requirements: TaskRequirements, workLimit: string | null): Promise<DeliveryRequirements | null> {
  const resolved: DeliveryRequirements = { pools: [], quotas: [], budgets: [], workLimit: null };
  for (const [i, r] of requirements.pools.entries()) {
    const pool = await ctx.tx.pools.getByName(ctx.spaceId, r.name);
    if (!pool) throw notFound(`pool ${r.name}`);
    if (r.units > pool.capacity) throw validationFailed(`body.requirements.pools.${i}.units`, `${r.units} units exceed pool ${r.name}'s capacity ${pool.capacity}`);
    resolved.pools.push({ id: pool.id, name: pool.name, units: r.units });
  }
  for (const [i, r] of requirements.quotas.entries()) {
    const allowance = await ctx.tx.allowances.getByName(ctx.spaceId, r.name);
    if (!allowance) throw notFound(`allowance ${r.name}`);
    if (r.units > allowance.unitsLimit) throw validationFailed(`body.requirements.quotas.${i}.units`, `${r.units} units exceed allowance ${r.name}'s unitsLimit ${allowance.unitsLimit}`);
    resolved.quotas.push({ id: allowance.id, name: allowance.name, units: r.units });
  }
  for (const r of requirements.budgets) {
    const budget = await ctx.tx.budgets.getByName(ctx.spaceId, r.name);
    if (!budget) throw notFound(`budget ${r.name}`);
    resolved.budgets.push({ id: budget.id, name: budget.name, reserveMinor: r.reserveMinor });
  }
  if (workLimit !== null) {
    const limit = await ctx.tx.workLimits.getByName(ctx.spaceId, workLimit);
    if (!limit) throw notFound(`work limit ${workLimit}`);
    resolved.workLimit = { id: limit.id, name: limit.name };
  }
  const byName = (a: { name: string }, b: { name: string }): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  resolved.pools.sort(byName);
  resolved.quotas.sort(byName);
  resolved.budgets.sort(byName);
  return hasRequirements(resolved) ? resolved : null;
}

/**
 * Create-or-join by (space, taskKey) and fingerprint. A new task sends its delivery to the
 * mailbox in the same transaction (payload {taskId, input}); the same key and fingerprint joins
 * (subscribing subscriberId when given); another fingerprint is TASK_KEY_CONFLICT.
 */
export async function submit(ctx: OpContext, body: TaskSubmitBody): Promise<Submitted> {
  // The scope's run (locked against its end first: docs/lock-order.md), the task of the key, and
  // the mailbox with its backlog, in one round trip; only a create needs the mailbox (a join's
  // is in its fingerprint), and it must exist before the task row names it.
  const [run, existing, target] = await together(
    governingRun(ctx, body.scopeId),
    ctx.tx.tasks.getByKey(ctx.spaceId, body.taskKey),
    ctx.tx.mailboxes.getForSend(ctx.spaceId, body.mailboxId, ctx.limits.maxBacklog),
  );
  return submitWith(ctx, body, run, existing, target);
}

export interface Submitted {
  created: boolean;
  reply: TaskSubmitReply;
  /** The task created or joined. */
  task: Task;
}

/**
 * submit on what it read: the scope's run (if any), the task of its key (if any) and the mailbox
 * with its backlog. A submit-batch reads those for all its items at once and keeps them current
 * (submitMany). Fails, when it fails, before its first write. Under an ended run every submit is
 * refused, a join of an existing key too (docs/design/0019-runs.md).
 */
export async function submitWith(ctx: OpContext, body: TaskSubmitBody, run: Run | undefined, existing: Task | undefined, target: SendTarget | undefined): Promise<Submitted> {
  refuseIfEnded(run, body.scopeId);
  const requirements: TaskRequirements = { pools: body.requirements?.pools ?? [], quotas: body.requirements?.quotas ?? [], budgets: body.requirements?.budgets ?? [] };
  const input = body.input ?? null;
  const workLimit = body.workLimit ?? null;
  const fingerprint = taskFingerprint(body.mailboxId, input, requirements, workLimit);
  if (existing) return { created: false, reply: await joinExisting(ctx, existing, fingerprint, body), task: existing };
  if (!target) throw notFound('mailbox');
  const deliveryRequirements = await resolveRequirements(ctx, requirements, workLimit);
  // A concurrent submit of the key that commits first makes this transaction run again (the
  // insert's race check, TaskRepository.insert), and then the lookup above answers as a join.
  const task = await createTask(ctx, target, { taskKey: body.taskKey, scopeId: body.scopeId, input, requirements, workLimit, deadline: body.deadline, fingerprint }, deliveryRequirements);
  if (body.subscriberId !== undefined) await subscribe(ctx, task, body.subscriberId, body.scopeId);
  return { created: true, reply: { taskId: task.id, state: task.state, created: true }, task };
}

export interface NewTaskFields {
  taskKey: string;
  scopeId: string;
  input: unknown;
  requirements: TaskRequirements;
  workLimit: string | null;
  deadline: string | undefined;
  fingerprint: string;
}

/**
 * Inserts a PENDING task and sends its delivery to `mailbox` (payload {taskId, input}), with
 * their events. The caller found the taskKey free; should a concurrent submit of the key commit
 * first, the transaction runs again (TaskRepository.insert). Submit and a group's member create
 * share it.
 */
export async function createTask(ctx: OpContext, target: SendTarget, fields: NewTaskFields, deliveryRequirements: DeliveryRequirements | null): Promise<Task> {
  const { mailbox } = target;
  const task: Task = {
    id: ctx.random.uuid(),
    spaceId: ctx.spaceId,
    taskKey: fields.taskKey,
    fingerprint: fields.fingerprint,
    mailboxId: mailbox.id,
    scopeId: fields.scopeId,
    state: 'PENDING',
    input: fields.input,
    requirements: fields.requirements,
    workLimit: fields.workLimit,
    deadline: fields.deadline === undefined ? null : msFromIso(fields.deadline),
    attempts: 0,
    outcome: null,
    failureReason: null,
    messageId: ctx.random.uuid(),
    groupId: null,
    tombstoned: false,
    createdAt: ctx.nowMs,
    updatedAt: ctx.nowMs,
  };
  // The delivery's checks (payload, backlog) come before the task's insert: a submit that fails
  // fails before its first write, so a submit-batch item needs no savepoint (batches/items.ts).
  const prepared = await prepareSend(ctx, target, {
    id: task.messageId!,
    scopeId: task.scopeId,
    payload: { taskId: task.id, input: fields.input },
    deadline: fields.deadline,
    taskId: task.id,
    requirements: deliveryRequirements,
  });
  assert(prepared.created, `task ${task.id}: its delivery was not sent`);
  await ctx.tx.tasks.insert(task);
  const deliveryEvents = await insertSend(ctx, target, prepared.message);
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [taskEvent(task, eventTypes.taskSubmitted, { taskKey: task.taskKey, mailboxId: task.mailboxId }), ...deliveryEvents]);
  return task;
}

async function joinExisting(ctx: OpContext, task: Task, fingerprint: string, body: TaskSubmitBody): Promise<TaskSubmitReply> {
  if (task.fingerprint !== fingerprint) throw new BatonError('TASK_KEY_CONFLICT', `taskKey ${task.taskKey} was submitted with another mailboxId, input, requirements or workLimit`);
  if (body.subscriberId !== undefined) await subscribe(ctx, task, body.subscriberId, body.scopeId);
  return { taskId: task.id, state: task.state, created: false };
}

async function subscribe(ctx: OpContext, task: Task, subscriberId: string, scopeId: string): Promise<boolean> {
  const added = await ctx.tx.tasks.addSubscriber({ spaceId: ctx.spaceId, taskId: task.id, subscriberId, scopeId, joinedAt: ctx.nowMs });
  if (added) await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [taskEvent(task, eventTypes.taskJoined, { subscriberId, subscriberScopeId: scopeId })]);
  return added;
}

export async function getTask(tx: Tx, spaceId: string, id: string): Promise<TaskView> {
  return viewOf(tx, await taskOf(tx, spaceId, id));
}

export async function listTasks(tx: Tx, spaceId: string, query: TaskListQuery): Promise<Page<TaskView>> {
  const after = query.cursor === undefined ? null : decodeTaskCursor(query.cursor);
  const rows = await tx.tasks.list(spaceId, query.scopeId ?? null, query.state ?? null, after, query.limit + 1);
  const page = rows.slice(0, query.limit);
  const items: TaskView[] = [];
  for (const t of page) items.push(await viewOf(tx, t));
  return { items, nextCursor: rows.length > query.limit ? encodeTaskCursor(page.at(-1)!) : null };
}

const encodeTaskCursor = (p: TaskListPosition): string => Buffer.from(`t:${p.createdAt}:${p.id}`, 'utf8').toString('base64url');

function decodeTaskCursor(cursor: string): TaskListPosition {
  const match = /^t:(\d{1,15}):([0-9a-f-]{36})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  const position = match ? { createdAt: Number(match[1]), id: match[2]! } : undefined;
  if (position === undefined || encodeTaskCursor(position) !== cursor) throw validationFailed('cursor', 'not a cursor this list returned');
  return position;
}

/** CANCELLED, with its READY or CLAIMED delivery, the task and delivery already locked by the caller: the task after, and the events. */
export async function cancelLocked(ctx: OpContext, task: Task, message: Message | undefined, reason: string | null): Promise<{ next: Task; events: NewEvent[] }> {
  assert(!isTerminalTask(task.state), `cancel of ${task.state} task ${task.id}`);
  const next: Task = { ...task, state: 'CANCELLED', failureReason: reason, updatedAt: ctx.nowMs };
  await ctx.tx.tasks.update(next);
  const events = [taskEvent(next, eventTypes.taskCancelled, { reason, from: task.state })];
  if (message && (message.state === 'READY' || message.state === 'CLAIMED')) {
    await ctx.tx.messages.update(cancelled(message, ctx.nowMs));
    // Cleanup: a claimed delivery's pool units and slot go back and its reservations are voided.
    events.push(...(await releaseResources(ctx, message, 'voided', 'TASK_CANCELLED')));
    events.push({ type: eventTypes.messageCancelled, aggregateType: 'mailbox', aggregateId: message.mailboxId, scopeId: message.scopeId, data: { messageId: message.id, attempt: message.attempt, taskId: task.id } });
  }
  return { next, events };
}

/**
 * A group's decision cancels a member still live (reason GROUP_DECIDED): its events, none when
 * it has ended meanwhile. The caller holds the group's lock, which the lock order puts after
 * the member's delivery and task: so both are locked NOWAIT, and a busy one fails the whole
 * transaction for the store to retry, where waiting could deadlock with a transaction that holds
 * them and waits for the group (docs/lock-order.md). No group hook: the caller is deciding.
 */
export async function cancelForGroup(ctx: OpContext, taskId: string): Promise<NewEvent[]> {
  const peek = await taskOf(ctx.tx, ctx.spaceId, taskId);
  const message = peek.messageId === null ? undefined : await ctx.tx.messages.get(ctx.spaceId, peek.messageId, { forUpdate: true, noWait: true });
  const task = await ctx.tx.tasks.get(ctx.spaceId, taskId, { forUpdate: true, noWait: true });
  assert(task !== undefined, `member ${taskId} vanished`);
  if (isTerminalTask(task.state)) return [];
  return (await cancelLocked(ctx, task, message, groupDecidedReason)).events;
}

export async function join(ctx: OpContext, id: string, body: TaskJoinBody): Promise<TaskStateReply> {
  const task = await taskOf(ctx.tx, ctx.spaceId, id);
  await subscribe(ctx, task, body.subscriberId, body.scopeId);
  return { taskId: task.id, state: task.state };
}

/** Removes a subscriber; zero subscribers does not cancel the task. */
export async function detach(ctx: OpContext, id: string, body: TaskDetachBody): Promise<TaskDetachReply> {
  const task = await taskOf(ctx.tx, ctx.spaceId, id);
  const detached = await ctx.tx.tasks.removeSubscriber(ctx.spaceId, task.id, body.subscriberId);
  if (detached) await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [taskEvent(task, eventTypes.taskDetached, { subscriberId: body.subscriberId })]);
  return { taskId: task.id, state: task.state, detached };
}

/** The debugger view: the task, its delivery, every claim's holder and lease (from task.running events), and its events. */
export async function debugView(tx: Tx, spaceId: string, id: string): Promise<TaskDebugView> {
  const task = await taskOf(tx, spaceId, id);
  const message = task.messageId === null ? undefined : await tx.messages.get(spaceId, task.messageId);
  const events = await tx.tasks.listEvents(spaceId, task.id, 1000);
  const attempts = events
    .filter((e) => e.type === eventTypes.taskRunning)
    .map((e) => ({
      messageId: String(e.data.messageId),
      attempt: Number(e.data.attempt),
      holder: (e.data.holder as string | null | undefined) ?? null,
      holderSession: (e.data.holderSession as string | null | undefined) ?? null,
      leaseExpiresAt: (e.data.leaseExpiresAt as string | null | undefined) ?? null,
      claimedAt: isoFromMs(e.occurredAt),
      claimed: (e.data.claimed as TaskDebugView['attempts'][number]['claimed'] | undefined) ?? null,
    }));
  return { task: await viewOf(tx, task), messages: message ? [messageView(message)] : [], attempts, events: events.map(eventView) };
}

// ---------------------------------------------------------------------------------------------
// Hooks of the delivery lifecycle: each runs in the transaction that moved the delivery, under the
// delivery's row lock (lock order: message, then task), and returns the moved task with its event
// for the caller to append with its own in one statement. Every one starts from the delivery with
// its task as read under that lock (LockedDelivery), or as the claim's own store operation moved
// it (ClaimedDelivery); tasks/rules.ts movedWithDelivery is the rule either way.

/** A task moved with its delivery, and its event; none when the delivery has no task or the task had ended. */
export interface TaskMoved {
  moved: Task | undefined;
  events: NewEvent[];
}

/** The event of a task moved with delivery `m`; none when it had ended and stayed as it was. */
const movedWith = (m: Message, moved: Task | undefined, type: string, data: Record<string, unknown>): TaskMoved => ({
  moved,
  events: moved ? [taskEvent(moved, type, { messageId: m.id, attempt: m.attempt, ...data })] : [],
});

/**
 * Moves the task of `delivered.message` (the delivery as it moved), read under the delivery's
 * lock, by movedWithDelivery; the write rides with the commit.
 */
async function moveWithDelivery(ctx: OpContext, delivered: LockedDelivery, move: TaskMove, type: string, data: Record<string, unknown>): Promise<TaskMoved> {
  const { message: m, task } = delivered;
  if (m.taskId === null) {
    assert(task === undefined, `plain message ${m.id} carries task ${task?.id}`);
    return { moved: undefined, events: [] };
  }
  assert(task !== undefined && task.id === m.taskId, `task ${task?.id} read for delivery ${m.id} of task ${m.taskId}`);
  const moved = movedWithDelivery(task, move);
  if (moved) await ctx.tx.tasks.update(moved);
  return movedWith(m, moved, type, data);
}

/** What task.running says of the claim: who holds the delivery until when, and what an admission claimed with it. */
const runningData = (m: Message): Record<string, unknown> => ({
  holder: m.holder,
  holderSession: m.holderSession,
  leaseExpiresAt: m.leaseExpiresAt === null ? null : isoFromMs(m.leaseExpiresAt),
  claimed: m.claimed === null ? null : claimedView(m.claimed),
});

/**
 * A claim whose store operation moved the task already (MessageRepository.claimNext, claimMany,
 * claimCandidate, claimCandidates): its task.running event, nothing written.
 */
export function startedByClaim(claimed: ClaimedDelivery): TaskMoved {
  const { message: m, task } = claimed;
  assert(task === undefined || (task.id === m.taskId && task.state === 'RUNNING' && task.attempts === m.attempt), `task moved with claim of ${m.id} is ${task?.state}`);
  return movedWith(m, task, eventTypes.taskRunning, runningData(m));
}

/**
 * A claim core made itself, under the delivery's lock (an admission that claimed resources
 * first, admission/service.ts): the task, read under that lock, to RUNNING.
 */
export async function startClaimed(ctx: OpContext, claimed: LockedDelivery): Promise<TaskMoved> {
  const m = claimed.message;
  assert(m.state === 'CLAIMED', `start of a task whose delivery ${m.id} is ${m.state}`);
  return moveWithDelivery(ctx, claimed, claimMove(m.attempt, ctx.nowMs), eventTypes.taskRunning, runningData(m));
}

const moveOf = (m: Message, state: TaskState, nowMs: number, outcome: unknown = null, failureReason: string | null = null): TaskMove => ({
  state,
  attempts: m.attempt,
  outcome,
  failureReason,
  updatedAt: nowMs,
});

/** A complete of the delivery (`acked.message` as ACKED): SUCCEEDED with the result payload as outcome. */
export async function onAcked(ctx: OpContext, acked: LockedDelivery, outcome: unknown): Promise<TaskMoved> {
  return moveWithDelivery(ctx, acked, moveOf(acked.message, 'SUCCEEDED', ctx.nowMs, outcome ?? null), eventTypes.taskSucceeded, {});
}

/**
 * A failed attempt (nack or lease expiry), `failed.message` being the message after it: READY
 * again makes the task PENDING (task.requeued); DEAD makes it FAILED with `reason`.
 */
export async function onFailedAttempt(ctx: OpContext, failed: LockedDelivery, reason: string): Promise<TaskMoved> {
  const dead = failed.message.state === 'DEAD';
  const move = dead ? moveOf(failed.message, 'FAILED', ctx.nowMs, null, reason) : moveOf(failed.message, 'PENDING', ctx.nowMs);
  return moveWithDelivery(ctx, failed, move, dead ? eventTypes.taskFailed : eventTypes.taskRequeued, { reason });
}

/**
 * A task whose deadline passed, locked with its delivery by the caller: EXPIRED, and a READY
 * delivery cancelled (a CLAIMED one runs on; its complete no longer changes the task).
 */
export async function expireLocked(ctx: OpContext, task: Task): Promise<{ next: Task; events: NewEvent[] }> {
  assert(!isTerminalTask(task.state) && task.deadline !== null && task.deadline <= ctx.nowMs, `expiry of ${task.state} task ${task.id}, deadline ${task.deadline}`);
  const next: Task = { ...task, state: 'EXPIRED', failureReason: 'DEADLINE_EXCEEDED', updatedAt: ctx.nowMs };
  assertTask(next);
  await ctx.tx.tasks.update(next);
  const events: NewEvent[] = [taskEvent(next, eventTypes.taskExpired, { from: task.state, deadline: isoFromMs(task.deadline) })];
  const message = task.messageId === null ? undefined : await ctx.tx.messages.get(task.spaceId, task.messageId);
  if (message && message.state === 'READY') {
    await ctx.tx.messages.update(cancelled(message, ctx.nowMs));
    events.push({ type: eventTypes.messageCancelled, aggregateType: 'mailbox', aggregateId: message.mailboxId, scopeId: message.scopeId, data: { messageId: message.id, attempt: message.attempt, taskId: task.id } });
  }
  return { next, events };
}
