import { assert } from '../assert';
import type { OpContext } from '../context';
import { BatonError, conflict, notFound } from '../errors';
import { eventTypes } from '../events/model';
import { checkPayloadSize, mailboxOf, send } from '../messages/service';
import { decodePositionCursor, encodePositionCursor } from '../paging';
import type { Random } from '../random';
import type { TimerArmBody, TimerView } from '../schemas/timers';
import type { Page } from '../store/page';
import type { Tx } from '../store/store';
import type { SpaceLimits } from '../tenancy/model';
import { spaceLimitBounds, spaceLimits } from '../tenancy/space-limits';
import { msFromIso } from '../time';
import { timerWorkKey, type Timer, type TimerState } from './model';
import { cancelledTimer, deferredTimer, fireAtOf, firedTimer, newTimer, sameArm, timerFingerprint } from './rules';
import { timerView } from './views';
import { governingRun, refuseIfEnded } from '../runs/guard';
import { together } from '../store/together';

/**
 * Timers (docs/design/0021-timers.md): a payload sent to a mailbox once the service clock passes fireAt.
 * Lock order (docs/lock-order.md): the timer row first, then (a firing) the mailbox row its send
 * takes. Arm locks no timer row (the timerKey's unique index decides a race), cancel locks the
 * one timer, and the firing sweep claims its timers with SKIP LOCKED, so it never waits on a
 * timer row and cannot close a cycle with a cancel. Every change appends its event in the same
 * transaction.
 */

/**
 * Arms a timer, or answers the timer of that timerKey when the body is the same (created:
 * false, in whatever state it is); another body is CONFLICT. Past the space's maxArmedTimers
 * ARMED timers, a new one is BACKLOG_FULL.
 */
export async function arm(ctx: OpContext, body: TimerArmBody): Promise<{ created: boolean; view: TimerView }> {
  checkPayloadSize('payload', body.payload, ctx.limits.maxPayloadBytes);
  const asked = { fireAtMs: body.fireAt === undefined ? undefined : msFromIso(body.fireAt), delaySeconds: body.delaySeconds };
  const fingerprint = timerFingerprint({ scopeId: body.scopeId, mailboxId: body.mailboxId, payload: body.payload, ...asked });
  // The scope's run first, locked against its end: an ended run refuses every arm under it, a repeat too (docs/design/0019-runs.md).
  const [run, existing] = await together(governingRun(ctx, body.scopeId), ctx.tx.timers.getByKey(ctx.spaceId, body.timerKey));
  refuseIfEnded(run, body.scopeId);
  if (existing) return { created: false, view: timerView(sameArm(existing, fingerprint)) };

  const fireAt = fireAtOf(asked, ctx.nowMs);
  await mailboxOf(ctx.tx, ctx.spaceId, body.mailboxId);
  await checkArmedRoom(ctx);
  const timer = newTimer(
    { id: ctx.random.uuid(), spaceId: ctx.spaceId, timerKey: body.timerKey, scopeId: body.scopeId, mailboxId: body.mailboxId, payload: body.payload ?? null, fireAt, fingerprint },
    ctx.nowMs,
  );
  if (!(await ctx.tx.timers.insert(timer))) {
    // A concurrent arm of the same key committed first: answer as a repeat arm.
    const winner = await ctx.tx.timers.getByKey(ctx.spaceId, body.timerKey);
    if (!winner) throw conflict(`timerKey ${body.timerKey} is being armed; retry`);
    return { created: false, view: timerView(sameArm(winner, fingerprint)) };
  }
  await appendEvent(ctx, timer, eventTypes.timerArmed, { timerKey: timer.timerKey, mailboxId: timer.mailboxId, fireAt: timerView(timer).fireAt });
  return { created: true, view: timerView(timer) };
}

/**
 * maxArmedTimers, counted up to the limit. Arms committing at the same moment can each see room,
 * so the limit can be passed by at most the arms in flight at once (as maxBacklog; docs/api.md).
 */
async function checkArmedRoom(ctx: OpContext): Promise<void> {
  const cap = ctx.limits.maxArmedTimers;
  const armed = await ctx.tx.timers.countArmed(ctx.spaceId, cap);
  if (armed >= cap) throw new BatonError('BACKLOG_FULL', `the space holds ${armed} ARMED timers (maxArmedTimers ${cap}; PUT /limits raises it)`);
}

export async function getTimer(tx: Tx, spaceId: string, id: string): Promise<TimerView> {
  const timer = await tx.timers.get(spaceId, id);
  if (!timer) throw notFound('timer');
  return timerView(timer);
}

export interface TimerListRequest {
  /** Only timers in one of these states; all when undefined. */
  states: readonly TimerState[] | undefined;
  /** Only timers of this scopeId; all when undefined. */
  scopeId: string | undefined;
  cursor: string | undefined;
  limit: number;
}

/** Timers oldest first (createdAt, then id), optionally filtered by state and scopeId. */
export async function listTimers(tx: Tx, spaceId: string, request: TimerListRequest): Promise<Page<TimerView>> {
  const after = request.cursor === undefined ? null : decodePositionCursor(request.cursor);
  const filter = { states: request.states ?? null, scopeId: request.scopeId ?? null };
  const rows = await tx.timers.list(spaceId, filter, after, request.limit + 1);
  const page = rows.slice(0, request.limit);
  const last = page.at(-1);
  return { items: page.map(timerView), nextCursor: rows.length > request.limit && last ? encodePositionCursor(last) : null };
}

/** Cancels an ARMED timer; a repeat on a CANCELLED one answers its view; a FIRED one is CONFLICT. */
export async function cancel(ctx: OpContext, id: string): Promise<TimerView> {
  const timer = await ctx.tx.timers.get(ctx.spaceId, id, { forUpdate: true });
  if (!timer) throw notFound('timer');
  const next = cancelledTimer(timer, ctx.nowMs);
  if (!next) return timerView(timer);
  await writeCancel(ctx, next, 'REQUESTED');
  return timerView(next);
}

/**
 * Cancels up to `limit` ARMED timers whose scopeId is one of `scopeIds` (a run's cancel: the
 * run's scope and its children's) and says how many; fewer than `limit` means none is left.
 * Each emits timer.cancelled with `reason`. A timer the sweep fired first stays FIRED: the
 * rows are locked and re-read, so the two never both happen. The caller must not hold a
 * mailbox row lock (lock order: timer, then mailbox).
 */
export async function cancelArmedInScope(ctx: OpContext, scopeIds: readonly string[], limit: number, reason = 'RUN_CANCELLED'): Promise<number> {
  if (scopeIds.length === 0) return 0;
  const armed = await ctx.tx.timers.lockArmedInScopes(ctx.spaceId, scopeIds, limit);
  for (const timer of armed) await writeCancel(ctx, cancelledTimer(timer, ctx.nowMs)!, reason);
  return armed.length;
}

/** A scope's timers counted by state (for GET /runs/{scopeId}); states with none are 0. */
export async function countInScope(tx: Tx, spaceId: string, scopeId: string): Promise<Record<TimerState, number>> {
  const counts: Record<TimerState, number> = { ARMED: 0, FIRED: 0, CANCELLED: 0 };
  for (const { state, count } of await tx.timers.countByState(spaceId, scopeId)) counts[state] = count;
  return counts;
}

async function writeCancel(ctx: OpContext, next: Timer, reason: string): Promise<void> {
  assert(next.state === 'CANCELLED', `timer ${next.id}: cancel wrote ${next.state}`);
  await ctx.tx.timers.update(next);
  await appendEvent(ctx, next, eventTypes.timerCancelled, { timerKey: next.timerKey, fireAt: timerView(next).fireAt, reason });
}

// ---------------------------------------------------------------------------------------------
// Firing

/**
 * The background sweep: fires up to `limit` due timers of any space, oldest dueAt first, in this
 * one transaction, and answers how many it took (fired or deferred), so the caller repeats
 * while batches come back full. Claimed with SKIP LOCKED and moved out of ARMED (or pushed past
 * nowMs) before the commit, a timer is fired by one sweep only, however many servers run it.
 */
export async function fireDue(tx: Tx, nowMs: number, limit: number, random: Random): Promise<number> {
  const due = await tx.timers.claimDue(nowMs, limit);
  const limitsOf = spaceLimitsReader(tx);
  for (const timer of due) {
    const ctx: OpContext = { tx, spaceId: timer.spaceId, nowMs, random, limits: await limitsOf(timer.spaceId) };
    await fire(ctx, timer);
  }
  return due.length;
}

/**
 * Sends the timer's message (workKey timer:<id>) through the send path, so backlog limits,
 * message.sent and the wake-up of a parked recv happen as for any send, and marks it FIRED. A
 * mailbox or space with no room (BACKLOG_FULL) defers the firing: the timer stays ARMED and is
 * taken again timerRetryDelayMs later. A message that already holds the workKey (a client
 * sent it by hand) is taken as the firing: the key names the firing, and a second send of it
 * could never be made.
 */
async function fire(ctx: OpContext, timer: Timer): Promise<void> {
  const workKey = timerWorkKey(timer.id);
  let messageId: string;
  try {
    messageId = (await send(ctx, timer.mailboxId, { scopeId: timer.scopeId, payload: timer.payload, workKey })).view.id;
  } catch (error) {
    if (!(error instanceof BatonError)) throw error;
    if (error.code === 'BACKLOG_FULL') return ctx.tx.timers.update(deferredTimer(timer, ctx.nowMs));
    const prior = error.code === 'CONFLICT' ? await ctx.tx.messages.getByWorkKey(ctx.spaceId, timer.mailboxId, workKey) : undefined;
    if (!prior) throw error;
    messageId = prior.id;
  }
  const next = firedTimer(timer, messageId, ctx.nowMs);
  await ctx.tx.timers.update(next);
  await appendEvent(ctx, next, eventTypes.timerFired, { timerKey: next.timerKey, mailboxId: next.mailboxId, messageId, fireAt: timerView(next).fireAt });
}

/**
 * The limits a firing sends under: the space's own (its maxBacklog decides whether there is
 * room), read once per space in a batch. maxPayloadBytes is the bound's: the payload was
 * checked when the timer was armed, and a limit lowered since must not strand the timer.
 */
function spaceLimitsReader(tx: Tx): (spaceId: string) => Promise<SpaceLimits> {
  const read = new Map<string, Promise<SpaceLimits>>();
  const load = async (spaceId: string): Promise<SpaceLimits> => {
    const space = await tx.spaces.get(spaceId);
    assert(space, `timer of missing space ${spaceId}`);
    const org = await tx.orgs.get(space.orgId);
    assert(org, `space ${spaceId} of missing organization ${space.orgId}`);
    return { ...spaceLimits(space, org), maxPayloadBytes: spaceLimitBounds.maxPayloadBytes.max };
  };
  return (spaceId) => {
    let limits = read.get(spaceId);
    if (!limits) read.set(spaceId, (limits = load(spaceId)));
    return limits;
  };
}

/** Every timer event carries the timer as its aggregate and the timer's scopeId. */
function appendEvent(ctx: OpContext, t: Timer, type: string, data: Record<string, unknown>): Promise<void> {
  return ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [{ type, aggregateType: 'timer', aggregateId: t.id, scopeId: t.scopeId, data }]);
}
