import { assert } from '../assert';
import type { OpContext } from '../context';
import { BatonError, conflict, notFound, validationFailed } from '../errors';
import { eventView } from '../events/journal';
import { eventTypes, type NewEvent } from '../events/model';
import { cancelled } from '../messages/rules';
import { releaseResources } from '../admission/claims';
import type { Message } from '../messages/model';
import { mailboxOf, sendTo } from '../messages/service';
import { messageView } from '../messages/views';
import type { TaskCancelBody, TaskDebugView, TaskDetachBody, TaskDetachReply, TaskJoinBody, TaskListQuery, TaskStateReply, TaskSubmitBody, TaskSubmitReply, TaskView } from '../schemas/tasks';
import type { Page } from '../store/repositories';
import type { Tx } from '../store/store';
import { isoFromMs, msFromIso } from '../time';
import { isTerminalTask, type Task, type TaskListPosition, type TaskMove, type TaskRequirements, type TaskState } from './model';
import { assertTask, taskFingerprint } from './rules';
import { taskView } from './views';
import { claimedView } from '../admission/views';
import { hasRequirements, type DeliveryRequirements } from '../admission/model';

/**
 * Tasks without admission (decisions §6). A task's delivery is a message in its mailbox that
 * carries the taskId; the message service calls the hooks below inside its own transactions, so
 * a claim, complete, nack or lease expiry moves the task in the same transaction. Lock order
 * (docs/lock-order.md): the delivery message first, then the task row.
 */

const taskEvent = (t: Pick<Task, 'id' | 'scopeId'>, type: string, data: Record<string, unknown> = {}): NewEvent => ({
  type,
  aggregateType: 'task',
  aggregateId: t.id,
  scopeId: t.scopeId,
  data: { taskId: t.id, ...data },
});

async function taskOf(tx: Tx, spaceId: string, id: string, lock = false): Promise<Task> {
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
export async function submit(ctx: OpContext, body: TaskSubmitBody): Promise<{ created: boolean; reply: TaskSubmitReply }> {
  const requirements: TaskRequirements = { pools: body.requirements?.pools ?? [], quotas: body.requirements?.quotas ?? [], budgets: body.requirements?.budgets ?? [] };
  const input = body.input ?? null;
  const workLimit = body.workLimit ?? null;
  const fingerprint = taskFingerprint(body.mailboxId, input, requirements, workLimit);
  const existing = await ctx.tx.tasks.getByKey(ctx.spaceId, body.taskKey);
  if (existing) return { created: false, reply: await joinExisting(ctx, existing, fingerprint, body) };

  // The mailbox first: it must exist before the task row names it.
  const mailbox = await mailboxOf(ctx.tx, ctx.spaceId, body.mailboxId);
  const deliveryRequirements = await resolveRequirements(ctx, requirements, workLimit);
  const task: Task = {
    id: ctx.random.uuid(),
    spaceId: ctx.spaceId,
    taskKey: body.taskKey,
    fingerprint,
    mailboxId: body.mailboxId,
    scopeId: body.scopeId,
    state: 'PENDING',
    input,
    requirements,
    workLimit,
    deadline: body.deadline === undefined ? null : msFromIso(body.deadline),
    attempts: 0,
    outcome: null,
    failureReason: null,
    messageId: ctx.random.uuid(),
    createdAt: ctx.nowMs,
    updatedAt: ctx.nowMs,
  };
  if (!(await ctx.tx.tasks.insert(task))) {
    // A concurrent submit of the same taskKey committed first: answer as a join.
    const winner = await ctx.tx.tasks.getByKey(ctx.spaceId, body.taskKey);
    if (!winner) throw conflict(`task ${body.taskKey} is being submitted; retry`);
    return { created: false, reply: await joinExisting(ctx, winner, fingerprint, body) };
  }
  const delivery = await sendTo(ctx, mailbox, {
    id: task.messageId!,
    scopeId: task.scopeId,
    payload: { taskId: task.id, input },
    deadline: body.deadline,
    taskId: task.id,
    requirements: deliveryRequirements,
  });
  assert(delivery.created, `task ${task.id}: its delivery was not sent`);
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [taskEvent(task, eventTypes.taskSubmitted, { taskKey: task.taskKey, mailboxId: task.mailboxId }), ...delivery.events]);
  if (body.subscriberId !== undefined) await subscribe(ctx, task, body.subscriberId, body.scopeId);
  return { created: true, reply: { taskId: task.id, state: task.state, created: true } };
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

/** Nonterminal to CANCELLED with its delivery; a terminal task is CONFLICT naming the state. Never gated. */
export async function cancel(ctx: OpContext, id: string, body: TaskCancelBody): Promise<TaskStateReply> {
  const peek = await taskOf(ctx.tx, ctx.spaceId, id);
  // Lock order: the delivery message first, then the task.
  const message = peek.messageId === null ? undefined : await ctx.tx.messages.get(ctx.spaceId, peek.messageId, { forUpdate: true });
  const task = await taskOf(ctx.tx, ctx.spaceId, id, true);
  if (isTerminalTask(task.state)) throw conflict(`task ${task.id} is ${task.state}`);
  const reason = body.reason ?? null;
  const next: Task = { ...task, state: 'CANCELLED', failureReason: reason, updatedAt: ctx.nowMs };
  await ctx.tx.tasks.update(next);
  const events = [taskEvent(next, eventTypes.taskCancelled, { reason, from: task.state })];
  if (message && (message.state === 'READY' || message.state === 'CLAIMED')) {
    await ctx.tx.messages.update(cancelled(message, ctx.nowMs));
    // Cleanup: a claimed delivery's pool units and slot go back and its reservations are voided.
    events.push(...(await releaseResources(ctx, message, true, 'TASK_CANCELLED')));
    events.push({ type: eventTypes.messageCancelled, aggregateType: 'mailbox', aggregateId: message.mailboxId, scopeId: message.scopeId, data: { messageId: message.id, attempt: message.attempt, taskId: task.id } });
  }
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, events);
  return { taskId: next.id, state: next.state };
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
// Hooks of the message service: each runs in the transaction that moved the delivery, under the
// delivery's row lock (lock order: message, then task), and returns its event for the caller to
// append with its own in one statement. A terminal task stays as it is (no event).

const moveOf = (m: Message, state: TaskState, nowMs: number, outcome: unknown = null, failureReason: string | null = null): TaskMove => ({
  state,
  attempts: m.attempt,
  outcome,
  failureReason,
  updatedAt: nowMs,
});

async function moveTask(tx: Tx, m: Message, move: TaskMove, type: string, data: Record<string, unknown>): Promise<NewEvent[]> {
  if (m.taskId === null) return [];
  const task = await tx.tasks.moveLive(m.spaceId, m.taskId, move);
  return task ? [taskEvent(task, type, { messageId: m.id, attempt: m.attempt, ...data })] : [];
}

/** A claim of the delivery: RUNNING. */
export async function onClaimed(tx: Tx, nowMs: number, m: Message): Promise<NewEvent[]> {
  return moveTask(tx, m, moveOf(m, 'RUNNING', nowMs), eventTypes.taskRunning, {
    holder: m.holder,
    holderSession: m.holderSession,
    leaseExpiresAt: m.leaseExpiresAt === null ? null : isoFromMs(m.leaseExpiresAt),
    claimed: m.claimed === null ? null : claimedView(m.claimed),
  });
}

/** A complete of the delivery: SUCCEEDED with the result payload as outcome. */
export async function onAcked(tx: Tx, nowMs: number, m: Message, outcome: unknown): Promise<NewEvent[]> {
  return moveTask(tx, m, moveOf(m, 'SUCCEEDED', nowMs, outcome ?? null), eventTypes.taskSucceeded, {});
}

/**
 * A failed attempt (nack or lease expiry), `m` being the message after it: READY again makes the
 * task PENDING (task.requeued); DEAD makes it FAILED with `reason`.
 */
export async function onFailedAttempt(tx: Tx, nowMs: number, m: Message, reason: string): Promise<NewEvent[]> {
  const failed = m.state === 'DEAD';
  const move = failed ? moveOf(m, 'FAILED', nowMs, null, reason) : moveOf(m, 'PENDING', nowMs);
  return moveTask(tx, m, move, failed ? eventTypes.taskFailed : eventTypes.taskRequeued, { reason });
}

/**
 * The deadline sweep: PENDING or RUNNING tasks whose deadline passed become EXPIRED, and a READY
 * delivery is cancelled (a CLAIMED one runs on; its complete no longer changes the task).
 */
export async function expireDeadlines(tx: Tx, nowMs: number, limit: number): Promise<number> {
  const due = await tx.tasks.claimDeadlinePassed(nowMs, limit);
  for (const task of due) {
    const next: Task = { ...task, state: 'EXPIRED', failureReason: 'DEADLINE_EXCEEDED', updatedAt: nowMs };
    assertTask(next);
    await tx.tasks.update(next);
    const events: NewEvent[] = [taskEvent(next, eventTypes.taskExpired, { from: task.state, deadline: isoFromMs(task.deadline!) })];
    const message = task.messageId === null ? undefined : await tx.messages.get(task.spaceId, task.messageId);
    if (message && message.state === 'READY') {
      await tx.messages.update(cancelled(message, nowMs));
      events.push({ type: eventTypes.messageCancelled, aggregateType: 'mailbox', aggregateId: message.mailboxId, scopeId: message.scopeId, data: { messageId: message.id, attempt: message.attempt, taskId: task.id } });
    }
    await tx.events.append(task.spaceId, nowMs, events);
  }
  return due.length;
}
