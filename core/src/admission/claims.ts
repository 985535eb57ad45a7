import { assert } from '../assert';
import type { OpContext } from '../context';
import { coolingDown, fits, rollWindow, take } from '../allowances/rules';
import type { Consumption } from '../allowances/model';
import { reserveFunds, voidRemainder } from '../budgets/rules';
import type { BudgetEntry, Reservation } from '../budgets/model';
import { eventTypes, type NewEvent } from '../events/model';
import type { Message } from '../messages/model';
import { topicOf } from '../notifier';
import { plantedBugs } from '../planted-bugs';
import { isoFromMs } from '../time';
import type { ClaimedResources, DeliveryRequirements } from './model';

/**
 * Claiming and releasing the resources of a task delivery, in the lock order of
 * docs/lock-order.md: the delivery row (taken by the caller), then pools, quotas (allowances),
 * budgets, and the work limit, each kind in name order. Releases take the same order, so an
 * admission and a release never wait on each other in a cycle.
 */

export interface Holder {
  holder: string;
  holderSession: string;
}

/**
 * What an admit learned about resources that were short, for the candidates after the one that
 * found them short and for the long poll: which topics' commits could free them, and the
 * earliest time the clock alone could (a window roll, a cooldown's end).
 */
export class Shortages {
  /** Smallest amount found short per resource key: a later candidate asking as much or more is short too. */
  private readonly short = new Map<string, bigint>();
  readonly topics = new Set<string>();
  retryAtMs: number | null = null;

  knownShort(r: DeliveryRequirements): boolean {
    const isShort = (key: string, amount: bigint): boolean => {
      const found = this.short.get(key);
      return found !== undefined && amount >= found;
    };
    return (
      r.pools.some((p) => isShort(`pool:${p.id}`, BigInt(p.units))) ||
      r.quotas.some((q) => isShort(`allowance:${q.id}`, BigInt(q.units))) ||
      r.budgets.some((b) => isShort(`budget:${b.id}`, BigInt(b.reserveMinor))) ||
      (r.workLimit !== null && isShort(`work_limit:${r.workLimit.id}`, 1n))
    );
  }

  record(aggregateType: string, id: string, amount: bigint, retryAtMs: number | null = null): void {
    const key = topicOf(aggregateType, id);
    const found = this.short.get(key);
    if (found === undefined || amount < found) this.short.set(key, amount);
    this.topics.add(key);
    if (retryAtMs !== null && (this.retryAtMs === null || retryAtMs < this.retryAtMs)) this.retryAtMs = retryAtMs;
  }
}

export interface ClaimAttempt {
  claimed: ClaimedResources;
  events: NewEvent[];
}

/**
 * Claims every resource `delivery` requires, or nothing: the first one short is recorded in
 * `shortages` and undefined is returned, the caller then rolling back to its savepoint (which
 * also releases the row locks taken here). Events are returned, not appended, so that an
 * admission appends all of its events in one statement.
 */
export async function claimResources(ctx: OpContext, delivery: Message, who: Holder, shortages: Shortages): Promise<ClaimAttempt | undefined> {
  const r = delivery.requirements;
  assert(r !== null && delivery.taskId !== null, `message ${delivery.id}: resource claim without requirements`);
  const { tx, spaceId, nowMs } = ctx;
  const claimed: ClaimedResources = { pools: [], quotas: [], budgets: [], workLimit: null };
  const events: NewEvent[] = [];
  const about = { messageId: delivery.id, taskId: delivery.taskId, holder: who.holder, holderSession: who.holderSession };

  for (const need of r.pools) {
    const pool = await tx.pools.claim(spaceId, need.id, need.units, nowMs);
    if (!pool) return void shortages.record('pool', need.id, BigInt(need.units));
    claimed.pools.push({ ...need });
    events.push({ type: eventTypes.poolUnitsClaimed, aggregateType: 'pool', aggregateId: need.id, scopeId: delivery.scopeId, data: { ...about, units: need.units, inUse: pool.inUse } });
  }
  for (const need of r.quotas) {
    const locked = await tx.allowances.get(spaceId, need.id, { forUpdate: true });
    assert(locked, `allowance ${need.id} named by a delivery is gone`);
    const a = rollWindow(locked, nowMs);
    if ((await tx.allowanceWaiters.countWaiting(spaceId, a.id)) > 0) return void shortages.record('allowance', a.id, 1n);
    if (coolingDown(a, nowMs)) return void shortages.record('allowance', a.id, 1n, a.cooldownUntil);
    if (!fits(a, need.units)) return void shortages.record('allowance', a.id, BigInt(need.units), a.windowStartsAt + a.windowSeconds * 1000);
    const next = take(a, need.units, nowMs);
    const consumption: Consumption = {
      id: ctx.random.uuid(), spaceId, allowanceId: a.id, scopeId: delivery.scopeId, holder: who.holder, units: need.units, workKey: null, windowStartsAt: next.windowStartsAt, createdAt: nowMs,
    };
    await tx.allowances.update(next);
    await tx.consumptions.insert(consumption);
    claimed.quotas.push({ ...need, consumptionId: consumption.id });
    events.push({
      type: eventTypes.allowanceConsumed, aggregateType: 'allowance', aggregateId: a.id, scopeId: delivery.scopeId,
      data: { ...about, consumptionId: consumption.id, units: need.units, workKey: null, windowStartsAt: isoFromMs(next.windowStartsAt), usedUnits: next.usedUnits },
    });
  }
  for (const need of r.budgets) {
    const budget = await tx.budgets.get(spaceId, need.id, { forUpdate: true });
    assert(budget, `budget ${need.id} named by a delivery is gone`);
    const amountMinor = BigInt(need.reserveMinor);
    if (amountMinor > budget.availableMinor) return void shortages.record('budget', need.id, amountMinor);
    const reservation: Reservation = {
      id: ctx.random.uuid(), spaceId, budgetId: need.id, scopeId: delivery.scopeId, holder: who.holder, amountMinor, settledMinor: 0n, remainingMinor: amountMinor,
      state: 'ACTIVE', settleBy: null, overdueAt: null, createdAt: nowMs, updatedAt: nowMs,
    };
    await tx.budgets.update(reserveFunds(budget, amountMinor, nowMs));
    await tx.reservations.insert(reservation);
    claimed.budgets.push({ id: need.id, name: need.name, reservationId: reservation.id, amountMinor: need.reserveMinor });
    events.push({
      type: eventTypes.budgetReserved, aggregateType: 'budget', aggregateId: need.id, scopeId: delivery.scopeId,
      data: { ...about, reservationId: reservation.id, amountMinor: need.reserveMinor, settleBy: null },
    });
  }
  if (r.workLimit !== null) {
    const limit = await tx.workLimits.claim(spaceId, r.workLimit.id, 1, nowMs);
    if (!limit) return void shortages.record('work_limit', r.workLimit.id, 1n);
    claimed.workLimit = { ...r.workLimit };
    events.push({ type: eventTypes.workLimitSlotClaimed, aggregateType: 'work_limit', aggregateId: r.workLimit.id, scopeId: delivery.scopeId, data: { ...about, inUse: limit.inUse } });
  }
  return { claimed, events };
}

/**
 * Returns what the claim of `delivery` (as it was while CLAIMED) holds: pool units and the
 * work-limit slot always; budget reservations still ACTIVE are voided when `voidReservations`
 * (a nack, an expiry, a cancel), left for the worker to settle otherwise (a complete). Quota
 * units stay spent. The caller holds the delivery's row lock and appends the events.
 */
export async function releaseResources(ctx: OpContext, delivery: Message, voidReservations: boolean, why: string): Promise<NewEvent[]> {
  const held = delivery.claimed;
  if (held === null) return [];
  const { tx, spaceId, nowMs } = ctx;
  const events: NewEvent[] = [];
  const about = { messageId: delivery.id, taskId: delivery.taskId, holder: delivery.holder, holderSession: delivery.holderSession, reason: why };
  for (const p of held.pools) {
    if (voidReservations && plantedBugs.has('admission-keeps-pool-units')) continue;
    const pool = await tx.pools.release(spaceId, p.id, p.units, nowMs);
    events.push({ type: eventTypes.poolUnitsReleased, aggregateType: 'pool', aggregateId: p.id, scopeId: delivery.scopeId, data: { ...about, units: p.units, inUse: pool.inUse } });
  }
  if (voidReservations) {
    for (const b of held.budgets) {
      const voided = await voidAdmissionReservation(ctx, delivery, b.id, b.reservationId);
      if (voided) events.push(voided);
    }
  }
  if (held.workLimit !== null) {
    const limit = await tx.workLimits.release(spaceId, held.workLimit.id, 1, nowMs);
    events.push({ type: eventTypes.workLimitSlotReleased, aggregateType: 'work_limit', aggregateId: held.workLimit.id, scopeId: delivery.scopeId, data: { ...about, inUse: limit.inUse } });
  }
  return events;
}

/**
 * Voids what remains of an admission's reservation, as POST /void would, under the workKey
 * `delivery:<messageId>:<attempt>` (unique per claim). A reservation the worker already settled
 * in full or voided itself is left alone: there is nothing to give back.
 */
async function voidAdmissionReservation(ctx: OpContext, delivery: Message, budgetId: string, reservationId: string): Promise<NewEvent | undefined> {
  const { tx, spaceId, nowMs } = ctx;
  const budget = await tx.budgets.get(spaceId, budgetId, { forUpdate: true });
  const reservation = await tx.reservations.get(spaceId, reservationId, { forUpdate: true });
  assert(budget && reservation && reservation.budgetId === budgetId, `reservation ${reservationId} of delivery ${delivery.id} is gone`);
  if (reservation.state !== 'ACTIVE') return undefined;
  const next = voidRemainder(budget, reservation, nowMs);
  const workKey = `delivery:${delivery.id}:${delivery.attempt}`;
  const entry: BudgetEntry = { id: ctx.random.uuid(), spaceId, budgetId, reservationId, kind: 'VOID', amountMinor: next.releasedMinor, workKey, createdAt: nowMs };
  await tx.budgets.update(next.budget);
  await tx.reservations.update(next.reservation);
  await tx.budgetEntries.insert(entry);
  return {
    type: eventTypes.budgetVoided, aggregateType: 'budget', aggregateId: budgetId, scopeId: reservation.scopeId,
    data: { entryId: entry.id, reservationId, amountMinor: next.releasedMinor.toString(), workKey, reservationState: next.reservation.state, messageId: delivery.id },
  };
}
