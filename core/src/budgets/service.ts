import { assert } from '../assert';
import type { OpContext } from '../context';
import { BatonError, conflict, notFound } from '../errors';
import { eventTypes } from '../events/model';
import { parseMinor } from '../money';
import { decodeNameCursor, decodePositionCursor, encodeNameCursor, encodePositionCursor } from '../paging';
import type { BudgetCreateBody, BudgetView, EntryReply, ReserveBody, ReservationView, SettleBody, VoidBody } from '../schemas/budgets';
import type { Page } from '../store/page';
import type { Tx } from '../store/store';
import { together } from '../store/together';
import { isoFromMs, msFromIso } from '../time';
import type { Budget, BudgetEntry, EntryKind, Reservation, ReservationState } from './model';
import { assertConservation, reserveFunds, settleFunds, voidRemainder } from './rules';
import { newReservation, reservedEvent } from './reservation';
import { budgetView, entryView, reservationView } from './views';
import { governingRun, refuseIfEnded } from '../runs/guard';

/**
 * Budget operations. Lock order inside one transaction: the budget row, then the
 * reservation row (docs/lock-order.md). Every operation validates before it writes, so a
 * business error leaves nothing behind but its stored idempotent reply.
 */

export interface Created<T> {
  created: boolean;
  view: T;
}

/**
 * Creates a budget, or returns the existing one when a budget of that name has identical
 * settings (create-or-get; the repeat-create rule of docs/api.md "Authentication and permissions" lets a key without resource_config do this).
 */
export async function createBudget(ctx: OpContext, body: BudgetCreateBody, canCreate: boolean): Promise<Created<BudgetView>> {
  const existing = await ctx.tx.budgets.getByName(ctx.spaceId, body.name);
  if (existing) {
    if (!sameSettings(existing, body)) throw conflict(`budget ${body.name} exists with other settings`);
    return { created: false, view: await loadView(ctx.tx, existing) };
  }
  if (!canCreate) throw new BatonError('FORBIDDEN', 'credential lacks resource_config');
  const limitMinor = parseMinor(body.limitMinor);
  const budget: Budget = {
    id: ctx.random.uuid(),
    spaceId: ctx.spaceId,
    name: body.name,
    currency: body.currency,
    scale: body.scale,
    limitMinor,
    availableMinor: limitMinor,
    reservedMinor: 0n,
    settledMinor: 0n,
    createdAt: ctx.nowMs,
    updatedAt: ctx.nowMs,
  };
  assertConservation(budget);
  await ctx.tx.budgets.insert(budget);
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [
    {
      type: eventTypes.budgetCreated,
      aggregateType: 'budget',
      aggregateId: budget.id,
      scopeId: null,
      data: { name: budget.name, currency: budget.currency, scale: budget.scale, limitMinor: body.limitMinor },
    },
  ]);
  return { created: true, view: budgetView(budget, []) };
}

function sameSettings(b: Budget, body: BudgetCreateBody): boolean {
  return b.currency === body.currency && b.scale === body.scale && b.limitMinor === BigInt(body.limitMinor);
}

export async function getBudget(tx: Tx, spaceId: string, id: string): Promise<BudgetView> {
  const budget = await tx.budgets.get(spaceId, id);
  if (!budget) throw notFound('budget');
  return loadView(tx, budget);
}

export async function listBudgets(tx: Tx, spaceId: string, cursor: string | undefined, limit: number): Promise<Page<BudgetView>> {
  const afterName = cursor === undefined ? null : decodeNameCursor(cursor);
  const rows = await tx.budgets.list(spaceId, afterName, limit + 1);
  const page = rows.slice(0, limit);
  const items = await Promise.all(page.map((b) => loadView(tx, b)));
  const last = page.at(-1);
  return { items, nextCursor: rows.length > limit && last ? encodeNameCursor(last.name) : null };
}

export interface ReservationListRequest {
  /** Only reservations in one of these states; all when undefined. */
  states: readonly ReservationState[] | undefined;
  cursor: string | undefined;
  limit: number;
}

/** A budget's reservations in any state, oldest first (docs/design/0007-budget-reservations.md); the budget view lists only ACTIVE ones. */
export async function listReservations(tx: Tx, spaceId: string, budgetId: string, request: ReservationListRequest): Promise<Page<ReservationView>> {
  const after = request.cursor === undefined ? null : decodePositionCursor(request.cursor);
  const [budget, rows] = await together(tx.budgets.get(spaceId, budgetId), tx.reservations.list(spaceId, budgetId, request.states ?? null, after, request.limit + 1));
  if (!budget) throw notFound('budget');
  const page = rows.slice(0, request.limit);
  const last = page.at(-1);
  return { items: page.map(reservationView), nextCursor: rows.length > request.limit && last ? encodePositionCursor(last) : null };
}

/** One reservation of the budget, in any state; another budget's reservation is NOT_FOUND. */
export async function getReservation(tx: Tx, spaceId: string, budgetId: string, reservationId: string): Promise<ReservationView> {
  const reservation = await tx.reservations.get(spaceId, reservationId);
  if (!reservation || reservation.budgetId !== budgetId) throw notFound('reservation');
  return reservationView(reservation);
}

async function loadView(tx: Tx, budget: Budget): Promise<BudgetView> {
  return budgetView(budget, await tx.reservations.listActive(budget.spaceId, budget.id));
}

async function lockBudget(ctx: OpContext, budgetId: string): Promise<Budget> {
  const budget = await ctx.tx.budgets.get(ctx.spaceId, budgetId, { forUpdate: true });
  if (!budget) throw notFound('budget');
  return budget;
}

/**
 * Reserves from the budget as read, unlocked: the funds move in one guarded UPDATE that rides
 * with the COMMIT (BudgetRepository.reserve), so reserves on one busy budget hold its row lock
 * only while they commit. Nothing in the reply depends on the balance after.
 */
export async function reserve(ctx: OpContext, budgetId: string, body: ReserveBody): Promise<ReservationView> {
  // The scope's run first, locked against its end (docs/lock-order.md), in the budget's round trip.
  const [run, read] = await together(governingRun(ctx, body.scopeId), ctx.tx.budgets.get(ctx.spaceId, budgetId));
  if (!read) throw notFound('budget');
  refuseIfEnded(run, body.scopeId);
  // Refuses INSUFFICIENT_BUDGET on what was read; the guard of the write repeats the check.
  reserveFunds(read, parseMinor(body.amountMinor), ctx.nowMs);
  const reservation = newReservation(ctx.random, ctx.nowMs, {
    spaceId: ctx.spaceId,
    budgetId,
    scopeId: body.scopeId,
    holder: body.holder,
    amountMinor: parseMinor(body.amountMinor),
    settleBy: body.settleBy ? msFromIso(body.settleBy) : null,
  });
  await ctx.tx.budgets.reserve(ctx.spaceId, budgetId, reservation.amountMinor, ctx.nowMs);
  await ctx.tx.reservations.insert(reservation);
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [reservedEvent(reservation)]);
  return reservationView(reservation);
}

export async function settle(ctx: OpContext, budgetId: string, body: SettleBody): Promise<EntryReply> {
  const amountMinor = parseMinor(body.amountMinor);
  return applyEntry(ctx, budgetId, body.reservationId, body.workKey, 'SETTLE', amountMinor, (b, r) => {
    const next = settleFunds(b, r, amountMinor, ctx.nowMs);
    return { ...next, amountMinor };
  });
}

export async function voidReservation(ctx: OpContext, budgetId: string, body: VoidBody): Promise<EntryReply> {
  return applyEntry(ctx, budgetId, body.reservationId, body.workKey, 'VOID', undefined, (b, r) => {
    const next = voidRemainder(b, r, ctx.nowMs);
    return { budget: next.budget, reservation: next.reservation, amountMinor: next.releasedMinor };
  });
}

type EntryEffect = (b: Budget, r: Reservation) => { budget: Budget; reservation: Reservation; amountMinor: bigint };

/**
 * The shared path of settle and void: lock, replay by workKey, apply, record the entry and its
 * event. `requestedMinor` is the settle amount (undefined for void, whose amount is decided by
 * the remainder) and must match on a replay.
 */
async function applyEntry(
  ctx: OpContext,
  budgetId: string,
  reservationId: string,
  workKey: string,
  kind: EntryKind,
  requestedMinor: bigint | undefined,
  effect: EntryEffect,
): Promise<EntryReply> {
  const { budget, reservation, prior, active } = await lockEntryTargets(ctx, budgetId, reservationId, workKey);
  if (!reservation || reservation.budgetId !== budgetId) throw notFound('reservation');

  if (prior) {
    const same = prior.kind === kind && prior.reservationId === reservationId && (requestedMinor === undefined || prior.amountMinor === requestedMinor);
    if (!same) throw conflict(`workKey ${workKey} was already used for a ${prior.kind} of ${prior.amountMinor} on reservation ${prior.reservationId}`);
    return { entry: entryView(prior), replay: true, reservation: reservationView(reservation), budget: budgetView(budget, active) };
  }

  const next = effect(budget, reservation);
  assert(next.reservation.state !== 'ACTIVE' || kind === 'SETTLE', 'a void always closes its reservation');
  const entry: BudgetEntry = {
    id: ctx.random.uuid(),
    spaceId: ctx.spaceId,
    budgetId,
    reservationId,
    kind,
    amountMinor: next.amountMinor,
    workKey,
    createdAt: ctx.nowMs,
  };
  await ctx.tx.budgets.update(next.budget);
  await ctx.tx.reservations.update(next.reservation);
  await ctx.tx.budgetEntries.insert(entry);
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [
    {
      type: kind === 'SETTLE' ? eventTypes.budgetSettled : eventTypes.budgetVoided,
      aggregateType: 'budget',
      aggregateId: budgetId,
      scopeId: reservation.scopeId,
      data: {
        entryId: entry.id,
        reservationId,
        amountMinor: next.amountMinor.toString(),
        workKey,
        reservationState: next.reservation.state,
      },
    },
  ]);
  // The budget's ACTIVE reservations after this entry: as read under the budget's lock, with this one changed.
  const activeAfter = active.map((r) => (r.id === reservationId ? next.reservation : r)).filter((r) => r.state === 'ACTIVE');
  return { entry: entryView(entry), replay: false, reservation: reservationView(next.reservation), budget: budgetView(next.budget, activeAfter) };
}

/**
 * What an entry reads, in lock order: the budget, then the reservation, both locked; then the
 * workKey's prior entry and the budget's ACTIVE reservations (for the reply), read under those
 * locks. Sent together: one round trip on PostgreSQL, not four.
 */
async function lockEntryTargets(ctx: OpContext, budgetId: string, reservationId: string, workKey: string) {
  const [budget, reservation, prior, active] = await together(
    lockBudget(ctx, budgetId),
    ctx.tx.reservations.get(ctx.spaceId, reservationId, { forUpdate: true }),
    ctx.tx.budgetEntries.getByWorkKey(ctx.spaceId, budgetId, workKey),
    ctx.tx.reservations.listActive(ctx.spaceId, budgetId),
  );
  return { budget, reservation, prior, active };
}

/**
 * Emits budget.reservation_overdue once for each ACTIVE reservation whose settleBy has passed.
 * settleBy never voids anything (docs/design/0007-budget-reservations.md). Returns how many were emitted.
 */
export async function emitOverdueReservations(tx: Tx, nowMs: number, limit: number): Promise<number> {
  const overdue = await tx.reservations.claimOverdue(nowMs, limit);
  for (const r of overdue) {
    assert(r.state === 'ACTIVE' && r.settleBy !== null && r.settleBy <= nowMs, `reservation ${r.id} is not overdue`);
    await tx.reservations.update({ ...r, overdueAt: nowMs });
    await tx.events.append(r.spaceId, nowMs, [
      {
        type: eventTypes.budgetReservationOverdue,
        aggregateType: 'budget',
        aggregateId: r.budgetId,
        scopeId: r.scopeId,
        data: { reservationId: r.id, holder: r.holder, settleBy: isoFromMs(r.settleBy), remainingMinor: r.remainingMinor.toString() },
      },
    ]);
  }
  return overdue.length;
}
