import { assert } from '../assert';
import type { OpContext } from '../context';
import { coolingDown, fits, rollWindow, take } from '../allowances/rules';
import type { Allowance, Consumption } from '../allowances/model';
import { reserveFunds, voidRemainder } from '../budgets/rules';
import type { Budget, BudgetEntry } from '../budgets/model';
import { newReservation, reservedEvent } from '../budgets/reservation';
import { eventTypes, type NewEvent } from '../events/model';
import type { Message } from '../messages/model';
import { topicOf } from '../notifier';
import type { Pool, WorkLimit } from '../pools/model';
import { together } from '../store/together';
import { isoFromMs } from '../time';
import type { ClaimedResources, DeliveryRequirements, ResourceKind } from './model';

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
  /** The kinds found short: what a blocked admit reports (the server counts them for metrics). */
  readonly kinds = new Set<ResourceKind>();
  retryAtMs: number | null = null;
  /** A candidate was passed over, or no more asked for, because the plan's agents at once had no leases left for it (LeaseRoom). */
  leasesShort = false;

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

  /** Notes a resource found short; answers false, what a claim step answers when it stops. */
  record(aggregateType: ResourceKind, id: string, amount: bigint, retryAtMs: number | null = null): false {
    const key = topicOf(aggregateType, id);
    this.kinds.add(aggregateType);
    const found = this.short.get(key);
    if (found === undefined || amount < found) this.short.set(key, amount);
    this.topics.add(key);
    if (retryAtMs !== null && (this.retryAtMs === null || retryAtMs < this.retryAtMs)) this.retryAtMs = retryAtMs;
    return false;
  }
}

export interface ClaimAttempt {
  claimed: ClaimedResources;
  events: NewEvent[];
}

/** One admission's claim as it is built: what it holds so far and the events to append. */
interface Claim extends ClaimAttempt {
  ctx: OpContext;
  delivery: Message;
  who: Holder;
  /** What every event of the claim says about it. */
  about: Record<string, unknown>;
  shortages: Shortages;
}

/**
 * Claims every resource `delivery` requires, or nothing: the first one short (in lock order) is
 * recorded in `shortages` and undefined is returned, the caller then rolling back to its
 * savepoint (which also undoes the claims already made and releases every row lock taken here).
 * Events are returned, not appended, so that an admission appends all of its events in one
 * statement.
 *
 * Every claim and locked read goes out at once, in lock order, and costs one round trip
 * (issue 12; it was one per resource, seven with one of each): pools and the work limit claim
 * with a conditional UPDATE, quotas and budgets are locked and read with their line, and core
 * decides on what came back. A short resource found after others were claimed costs those
 * claims, which the savepoint's rollback undoes, instead of a round trip per resource for
 * every admission that succeeds.
 */
export async function claimResources(ctx: OpContext, delivery: Message, who: Holder, shortages: Shortages): Promise<ClaimAttempt | undefined> {
  const r = delivery.requirements;
  assert(r !== null && delivery.taskId !== null, `message ${delivery.id}: resource claim without requirements`);
  const { tx, spaceId, nowMs } = ctx;
  const [pools, quotas, budgets, workLimit] = await together(
    together(...r.pools.map((need) => tx.pools.claim(spaceId, need.id, need.units, nowMs))),
    together(...r.quotas.map((need) => together(tx.allowances.get(spaceId, need.id, { forUpdate: true }), tx.allowanceWaiters.countWaiting(spaceId, need.id)))),
    together(...r.budgets.map((need) => tx.budgets.get(spaceId, need.id, { forUpdate: true }))),
    r.workLimit === null ? Promise.resolve(undefined) : tx.workLimits.claim(spaceId, r.workLimit.id, 1, nowMs),
  );
  const claim: Claim = {
    ctx,
    delivery,
    who,
    about: { messageId: delivery.id, taskId: delivery.taskId, holder: who.holder, holderSession: who.holderSession },
    shortages,
    claimed: { pools: [], quotas: [], budgets: [], workLimit: null },
    events: [],
  };
  for (const [i, need] of r.pools.entries()) if (!poolUnitsClaimed(claim, need, pools[i])) return undefined;
  for (const [i, need] of r.quotas.entries()) if (!(await consumeQuota(claim, need, ...quotas[i]!))) return undefined;
  for (const [i, need] of r.budgets.entries()) if (!(await reserveBudget(claim, need, budgets[i]))) return undefined;
  if (r.workLimit !== null && !workLimitSlotClaimed(claim, r.workLimit, workLimit)) return undefined;
  return { claimed: claim.claimed, events: claim.events };
}

/** `pool` is the pool after the claim's conditional UPDATE, undefined when it had too few units free. */
function poolUnitsClaimed(c: Claim, need: DeliveryRequirements['pools'][number], pool: Pool | undefined): boolean {
  if (!pool) return c.shortages.record('pool', need.id, BigInt(need.units));
  c.claimed.pools.push({ ...need });
  c.events.push({ type: eventTypes.poolUnitsClaimed, aggregateType: 'pool', aggregateId: need.id, scopeId: c.delivery.scopeId, data: { ...c.about, units: need.units, inUse: pool.inUse } });
  return true;
}

/**
 * As POST /consume would: only with nobody in the allowance's line, no cooldown, and room in the
 * window. `locked` and `waiting` were read in that order, the count under the row lock.
 */
async function consumeQuota(c: Claim, need: DeliveryRequirements['quotas'][number], locked: Allowance | undefined, waiting: number): Promise<boolean> {
  const { tx, spaceId, nowMs, random } = c.ctx;
  assert(locked, `allowance ${need.id} named by a delivery is gone`);
  const a = rollWindow(locked, nowMs);
  if (waiting > 0) return c.shortages.record('allowance', a.id, 1n);
  if (coolingDown(a, nowMs)) return c.shortages.record('allowance', a.id, 1n, a.cooldownUntil);
  if (!fits(a, need.units)) return c.shortages.record('allowance', a.id, BigInt(need.units), a.windowStartsAt + a.windowSeconds * 1000);
  const next = take(a, need.units, nowMs);
  const consumption: Consumption = {
    id: random.uuid(), spaceId, allowanceId: a.id, scopeId: c.delivery.scopeId, holder: c.who.holder, units: need.units, workKey: null, windowStartsAt: next.windowStartsAt, createdAt: nowMs,
  };
  await tx.allowances.update(next);
  await tx.consumptions.insert(consumption);
  c.claimed.quotas.push({ ...need, consumptionId: consumption.id });
  c.events.push({
    type: eventTypes.allowanceConsumed, aggregateType: 'allowance', aggregateId: a.id, scopeId: c.delivery.scopeId,
    data: { ...c.about, consumptionId: consumption.id, units: need.units, workKey: null, windowStartsAt: isoFromMs(next.windowStartsAt), usedUnits: next.usedUnits },
  });
  return true;
}

/** As POST /reserve would, with no settleBy: the reservation rides on the delivery. `budget` was read locked. */
async function reserveBudget(c: Claim, need: DeliveryRequirements['budgets'][number], budget: Budget | undefined): Promise<boolean> {
  const { tx, spaceId, nowMs, random } = c.ctx;
  assert(budget, `budget ${need.id} named by a delivery is gone`);
  const amountMinor = BigInt(need.reserveMinor);
  if (amountMinor > budget.availableMinor) return c.shortages.record('budget', need.id, amountMinor);
  const reservation = newReservation(random, nowMs, { spaceId, budgetId: need.id, scopeId: c.delivery.scopeId, holder: c.who.holder, amountMinor, settleBy: null });
  await tx.budgets.update(reserveFunds(budget, amountMinor, nowMs));
  await tx.reservations.insert(reservation);
  c.claimed.budgets.push({ id: need.id, name: need.name, reservationId: reservation.id, amountMinor: need.reserveMinor });
  c.events.push(reservedEvent(reservation, c.about));
  return true;
}

/** `limit` is the work limit after the claim's conditional UPDATE, undefined when every slot was taken. */
function workLimitSlotClaimed(c: Claim, need: { id: string; name: string }, limit: WorkLimit | undefined): boolean {
  if (!limit) return c.shortages.record('work_limit', need.id, 1n);
  c.claimed.workLimit = { ...need };
  c.events.push({ type: eventTypes.workLimitSlotClaimed, aggregateType: 'work_limit', aggregateId: need.id, scopeId: c.delivery.scopeId, data: { ...c.about, inUse: limit.inUse } });
  return true;
}

/**
 * What becomes of a claim's budget reservations still ACTIVE when its resources are released:
 * a complete leaves them for the worker to settle (`left-to-settle`); a nack, an expiry or a
 * cancel voids what remains of them (`voided`).
 */
export type ReservationsOnRelease = 'left-to-settle' | 'voided';

/**
 * Returns what the claim of `delivery` (as it was while CLAIMED) holds: pool units and the
 * work-limit slot always, its reservations as `reservations` says. Quota units stay spent. The
 * caller holds the delivery's row lock and appends the events.
 */
export async function releaseResources(ctx: OpContext, delivery: Message, reservations: ReservationsOnRelease, why: string): Promise<NewEvent[]> {
  const held = delivery.claimed;
  if (held === null) return [];
  const { tx, spaceId, nowMs } = ctx;
  const events: NewEvent[] = [];
  const about = { messageId: delivery.id, taskId: delivery.taskId, holder: delivery.holder, holderSession: delivery.holderSession, reason: why };
  for (const p of held.pools) {
    const pool = await tx.pools.release(spaceId, p.id, p.units, nowMs);
    events.push({ type: eventTypes.poolUnitsReleased, aggregateType: 'pool', aggregateId: p.id, scopeId: delivery.scopeId, data: { ...about, units: p.units, inUse: pool.inUse } });
  }
  if (reservations === 'voided') {
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
