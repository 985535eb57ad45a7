import { assert } from '../assert';
import type { OpContext } from '../context';
import { conflict } from '../errors';
import { eventTypes, type NewEvent } from '../events/model';
import { releaseResources } from '../admission/claims';
import * as groups from '../groups/service';
import { checkLease, checkPayloadSize, claimedEvent, lockMessage, messageEvent, readyEvent, receivableMailbox, send } from '../messages/service';
import { acked, cancelled, failedAttempt, leaseUntil, newToken } from '../messages/rules';
import type { ClaimedDelivery, ClaimRequest, LockedDelivery, Message, MessageState } from '../messages/model';
import { deliveryView } from '../messages/views';
import type { Random } from '../random';
import type { CompleteBody, CompleteReply, DeliveryView, NackBody, NackReply, RecvBody } from '../schemas/messages';
import type { TaskCancelBody, TaskStateReply } from '../schemas/tasks';
import type { Tx } from '../store/store';
import { together } from '../store/together';
import * as tasks from '../tasks/service';
import { isTerminalTask, type Task } from '../tasks/model';
import { defaultSpaceLimits } from '../tenancy/space-limits';
import { readyTopicsOf } from '../notifier';

/**
 * The life of a delivery once it is claimed, and of its task, end to end: a claim, a complete, a
 * nack, a lease that runs out, a task cancelled or past its deadline. Each sequences, in one
 * transaction and in lock order (docs/lock-order.md), the end of the message, the release of what
 * its admission claimed, the task's move, and the evaluation of the task's group. The modules it
 * sequences know nothing of each other's part: messages/service.ts is the queue, tasks/service.ts
 * tasks, groups/service.ts groups; only this module imports all of them.
 */

/** A task that ended may decide its group (after the task, in the lock order): the group's events. */
async function memberEnded(ctx: OpContext, task: Task | undefined): Promise<NewEvent[]> {
  if (task === undefined || task.groupId === null || !isTerminalTask(task.state)) return [];
  return groups.onMemberEnded(ctx, task);
}

/** A task's move with its group's evaluation: the events of both, task first. */
async function withMemberEnd(ctx: OpContext, move: tasks.TaskMoved): Promise<NewEvent[]> {
  return [...move.events, ...(await memberEnded(ctx, move.moved))];
}

// ---------------------------------------------------------------------------------------------
// Claims and their end

export interface ClaimOptions {
  mailboxId: string;
  /** The request's scopeId first, then the gate scopes below it (receivableMailbox). */
  scopeIds: readonly string[];
  holder: string;
  holderSession: string;
  leaseSeconds: number;
}

/**
 * Claims the oldest READY message of the mailbox in the request's scope or a group gate scope
 * below it, and emits message.claimed (naming the request's scope as claimScopeId). Undefined
 * when nothing is free.
 */
export async function claimNext(ctx: OpContext, options: ClaimOptions): Promise<{ message: Message; token: string } | undefined> {
  const { token, tokenHash } = newToken(ctx.random);
  return claimed(ctx, options, token, await ctx.tx.messages.claimNext(claimRequest(ctx, options, tokenHash)));
}

const claimRequest = (ctx: OpContext, options: ClaimOptions, tokenHash: string): ClaimRequest => ({
  spaceId: ctx.spaceId,
  mailboxId: options.mailboxId,
  scopeIds: options.scopeIds,
  holder: options.holder,
  holderSession: options.holderSession,
  tokenHash,
  leaseExpiresAt: leaseUntil(options.leaseSeconds, ctx.nowMs, ctx.limits.maxLeaseSeconds),
  nowMs: ctx.nowMs,
});

/**
 * A claimed delivery's events, its task's included (the claim moved the task already):
 * message.claimed names the request's scope as claimScopeId.
 */
async function claimed(ctx: OpContext, options: ClaimOptions, token: string, delivery: ClaimedDelivery | undefined): Promise<{ message: Message; token: string } | undefined> {
  if (!delivery) return undefined;
  const { message } = delivery;
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [claimedEvent(message, options.scopeIds[0]!), ...tasks.startedByClaim(delivery).events]);
  return { message, token };
}

/**
 * One receive attempt: the delivery, or undefined when nothing is READY for the scope; and the
 * topics the route's long poll waits on then (a delivery READY in a scope claimed from).
 */
export async function recv(ctx: OpContext, mailboxId: string, body: RecvBody): Promise<{ delivery: DeliveryView | undefined; wakeTopics: string[] }> {
  const options: ClaimOptions = { mailboxId, scopeIds: [body.scopeId], holder: body.holder, holderSession: body.holderSession, leaseSeconds: body.leaseSeconds };
  const { token, tokenHash } = newToken(ctx.random);
  // The claim goes out with the mailbox read, in its round trip, unless gate scopes lie below the
  // request's scope; the mailbox read names them, and the claim across them follows (admission
  // does the same). A refused receiver (an INBOX) fails the transaction, the claim with it.
  const [{ scopeIds }, first] = await together(
    receivableMailbox(ctx.tx, ctx.spaceId, mailboxId, body.holder, body.scopeId),
    ctx.tx.messages.claimNext({ ...claimRequest(ctx, options, tokenHash), unlessGated: true }),
  );
  const delivery = first ?? (scopeIds.length > 1 ? await ctx.tx.messages.claimNext(claimRequest(ctx, { ...options, scopeIds }, tokenHash)) : undefined);
  const got = await claimed(ctx, options, token, delivery);
  return { delivery: got && deliveryView(got.message, got.token), wakeTopics: readyTopicsOf(mailboxId, scopeIds, ['plain', 'task']) };
}

/**
 * Locks the delivery and reads its task right behind the lock (together: one round trip): what
 * a complete or nack starts from. NOT_FOUND when there is no such message.
 */
export async function lockDelivery(ctx: OpContext, messageId: string): Promise<LockedDelivery> {
  const [message, task] = await together(lockMessage(ctx, messageId), ctx.tx.tasks.getByDelivery(ctx.spaceId, messageId));
  assert((task === undefined) === (message.taskId === null), `message ${messageId}: its task ${message.taskId} is not the task read with it`);
  return { message, task };
}

/**
 * ACKED, with the optional result recorded on the message in the same transaction; a result
 * naming mailboxId and scopeId is also sent there (as a send: backlogLimit and workKey apply).
 */
export async function complete(ctx: OpContext, messageId: string, body: CompleteBody): Promise<CompleteReply> {
  // The body is judged before anything is locked: an oversized result is the caller's mistake whatever the message.
  checkResultSize(ctx, body);
  return ackLocked(ctx, await lockDelivery(ctx, messageId), body);
}

/** complete on `locked`, the delivery and task as this transaction locked and read them (a complete-batch's preload, or lockDelivery). */
export async function completeLocked(ctx: OpContext, locked: LockedDelivery, body: CompleteBody): Promise<CompleteReply> {
  checkResultSize(ctx, body);
  return ackLocked(ctx, locked, body);
}

function checkResultSize(ctx: OpContext, body: CompleteBody): void {
  if (body.result?.payload !== undefined) checkPayloadSize('result.payload', body.result.payload, ctx.limits.maxPayloadBytes);
}

/** ACKED, the body's size already checked. */
async function ackLocked(ctx: OpContext, locked: LockedDelivery, body: CompleteBody): Promise<CompleteReply> {
  const message = checkLease(ctx, locked.message, body.token);
  const result = body.result ?? null;
  const next = acked(message, result, ctx.nowMs);
  await ctx.tx.messages.update(next);
  // Pool units and the work-limit slot go back; an admission's reservations stay for the worker to settle.
  const released = await releaseResources(ctx, message, 'left-to-settle', 'ACKED');
  const taskEvents = await withMemberEnd(ctx, await tasks.onAcked(ctx, { message: next, task: locked.task }, result?.payload));
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [
    ...released,
    messageEvent(next, eventTypes.messageAcked, { holder: message.holder, resultMailboxId: result?.mailboxId ?? null }),
    ...taskEvents,
  ]);
  let resultMessageId: string | null = null;
  if (result?.mailboxId !== undefined && result.scopeId !== undefined) {
    const published = await send(ctx, result.mailboxId, { scopeId: result.scopeId, payload: result.payload ?? null, workKey: result.workKey });
    resultMessageId = published.view.id;
  }
  return { state: 'ACKED', resultMessageId };
}

/** Gives the message back: READY when retry is asked and attempts remain, else DEAD. */
export async function nack(ctx: OpContext, messageId: string, body: NackBody): Promise<NackReply> {
  return nackLocked(ctx, await lockDelivery(ctx, messageId), body);
}

/** nack on `locked`, the delivery and task as this transaction locked and read them (lockDelivery, or a nack-batch's preload). */
export async function nackLocked(ctx: OpContext, locked: LockedDelivery, body: NackBody): Promise<NackReply> {
  const message = checkLease(ctx, locked.message, body.token);
  const next = await failAttempt(
    ctx,
    { message, task: locked.task },
    body.retry,
    body.retry ? 'ATTEMPTS_EXHAUSTED' : 'NACKED',
    'NACKED',
    (state) => (state === 'READY' ? readyEvent : messageEvent)(message, eventTypes.messageNacked, { holder: message.holder, retry: body.retry, state }),
  );
  return { state: next.state };
}

const deadEvent = (m: Message, reason: 'NACKED' | 'ATTEMPTS_EXHAUSTED'): NewEvent => messageEvent(m, eventTypes.messageDead, { reason });

/**
 * The lease-expiry sweep: every claim whose lease ran out returns to READY (DEAD after the last
 * attempt), its token dies, and what an admission claimed with it is released (reservations
 * voided). Returns how many it expired; claimed with SKIP LOCKED, so several servers can sweep
 * at once.
 */
export async function expireLeases(tx: Tx, nowMs: number, limit: number, random: Random): Promise<number> {
  const expired = await tx.messages.claimExpired(nowMs, limit);
  // A member's end may decide its group and cancel other members' deliveries, perhaps ones in
  // this batch: from the first group member on, each task delivery is read again (it is locked
  // already) before it expires. Nothing else one expiry does touches another delivery or task.
  let stale = false;
  for (const found of expired) {
    const ctx: OpContext = { tx, spaceId: found.message.spaceId, nowMs, random, limits: defaultSpaceLimits };
    const locked = stale && found.message.taskId !== null ? await lockDelivery(ctx, found.message.id) : found;
    if (locked.task?.groupId != null) stale = true;
    const { message } = locked;
    if (message.state !== 'CLAIMED') continue;
    await failAttempt(ctx, locked, true, 'ATTEMPTS_EXHAUSTED', 'LEASE_EXPIRED', (state) =>
      (state === 'READY' ? readyEvent : messageEvent)(message, eventTypes.messageLeaseExpired, { holder: message.holder, holderSession: message.holderSession, state }),
    );
  }
  return expired.length;
}

/**
 * The end of a claim that failed (a nack, a lease that ran out): READY again while attempts
 * remain and a retry is wanted, otherwise DEAD; the claim's resources are released and its
 * reservations voided. A task delivery whose task has already ended (its deadline passed, or it
 * was cancelled, while the delivery was claimed) is not offered again: CANCELLED, not READY.
 */
async function failAttempt(
  ctx: OpContext,
  locked: LockedDelivery,
  retry: boolean,
  deadReason: 'NACKED' | 'ATTEMPTS_EXHAUSTED',
  releaseReason: string,
  causeEvent: (state: MessageState) => NewEvent,
): Promise<Message> {
  const { message } = locked;
  const failed = failedAttempt(message, retry, ctx.nowMs);
  const taskMove = await tasks.onFailedAttempt(ctx, { message: failed, task: locked.task }, deadReason);
  const taskEvents = await withMemberEnd(ctx, taskMove);
  const orphaned = failed.state === 'READY' && message.taskId !== null && taskMove.moved === undefined;
  const next = orphaned ? cancelled(failed, ctx.nowMs) : failed;
  await ctx.tx.messages.update(next);
  const events = [...(await releaseResources(ctx, message, 'voided', releaseReason)), causeEvent(next.state)];
  if (next.state === 'DEAD') events.push(deadEvent(next, deadReason));
  if (orphaned) events.push(messageEvent(next, eventTypes.messageCancelled, { taskId: next.taskId, reason: 'TASK_ENDED' }));
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [...events, ...taskEvents]);
  return next;
}

// ---------------------------------------------------------------------------------------------
// Tasks ended from outside their delivery

/** Nonterminal to CANCELLED with its delivery; a terminal task is CONFLICT naming the state. Never gated. */
export async function cancelTask(ctx: OpContext, id: string, body: TaskCancelBody): Promise<TaskStateReply> {
  const peek = await tasks.taskOf(ctx.tx, ctx.spaceId, id);
  // Lock order: the delivery message first, then the task.
  const message = peek.messageId === null ? undefined : await ctx.tx.messages.get(ctx.spaceId, peek.messageId, { forUpdate: true });
  const task = await tasks.taskOf(ctx.tx, ctx.spaceId, id, true);
  if (isTerminalTask(task.state)) throw conflict(`task ${task.id} is ${task.state}`);
  const { next, events } = await tasks.cancelLocked(ctx, task, message, body.reason ?? null);
  events.push(...(await memberEnded(ctx, next)));
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, events);
  return { taskId: next.id, state: next.state };
}

/**
 * The deadline sweep: PENDING or RUNNING tasks whose deadline passed become EXPIRED
 * (tasks.expireLocked). A member's expiry may decide its group, which cancels other members,
 * some perhaps in this same batch: a member is read again before it expires.
 */
export async function expireTaskDeadlines(tx: Tx, nowMs: number, limit: number, random: Random): Promise<number> {
  const due = await tx.tasks.claimDeadlinePassed(nowMs, limit);
  for (const claimed of due) {
    // Only a group member can have been cancelled by an earlier row's decision: only they are read again.
    const task = claimed.groupId === null ? claimed : await tx.tasks.get(claimed.spaceId, claimed.id);
    assert(task !== undefined, `due task ${claimed.id} vanished`);
    if (isTerminalTask(task.state)) continue;
    const ctx: OpContext = { tx, spaceId: task.spaceId, nowMs, random, limits: defaultSpaceLimits };
    const { next, events } = await tasks.expireLocked(ctx, task);
    events.push(...(await memberEnded(ctx, next)));
    await tx.events.append(task.spaceId, nowMs, events);
  }
  return due.length;
}
