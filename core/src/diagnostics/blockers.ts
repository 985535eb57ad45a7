import type { DeliveryRequirements } from '../admission/model';
import type { Allowance } from '../allowances/model';
import { coolingDown, fits, rollWindow } from '../allowances/rules';
import type { Budget } from '../budgets/model';
import type { Pool, WorkLimit } from '../pools/model';
import type { Blocker, TaskWait } from './model';
import type { DeliverySummary } from './repository';

/**
 * The resources a set of deliveries name, as they are now: read once per distinct resource, so
 * a page of tasks that all wait on one pool reads that pool once.
 */
export interface ResourcesNow {
  pools: ReadonlyMap<string, Pool>;
  allowances: ReadonlyMap<string, Allowance>;
  /** Allowances whose FIFO line holds a WAITING waiter. */
  queued: ReadonlySet<string>;
  budgets: ReadonlyMap<string, Budget>;
  workLimits: ReadonlyMap<string, WorkLimit>;
}

/**
 * Everything that keeps `r` from admission at `nowMs`: the tests of claimResources
 * (core/src/admission/claims.ts) made without claiming, and all of them, not only the first in
 * lock order that an admit stops at, so an operator sees every resource to free. A resource
 * that is gone (never, as they are not deleted) is left out rather than guessed at.
 */
export function blockersOf(r: DeliveryRequirements, now: ResourcesNow, nowMs: number): Blocker[] {
  const out: Blocker[] = [];
  for (const need of r.pools) {
    const pool = now.pools.get(need.id);
    const free = pool ? pool.capacity - pool.inUse : 0;
    if (pool && need.units > free) out.push(blocker('pool', need, 'UNITS_IN_USE', need.units, free, null));
  }
  for (const need of r.quotas) {
    const locked = now.allowances.get(need.id);
    if (!locked) continue;
    // A read must not fail on an allowance stamped by a server whose clock runs ahead of ours.
    const a = nowMs >= locked.createdAt ? rollWindow(locked, nowMs) : locked;
    const free = a.unitsLimit - a.usedUnits;
    // The order of consumeQuota: the line first, then the cooldown, then the window.
    if (now.queued.has(a.id)) out.push(blocker('allowance', need, 'WAIT_LINE', need.units, free, null));
    else if (coolingDown(a, nowMs)) out.push(blocker('allowance', need, 'COOLDOWN', need.units, free, a.cooldownUntil));
    else if (!fits(a, need.units)) out.push(blocker('allowance', need, 'WINDOW_SPENT', need.units, free, a.windowStartsAt + a.windowSeconds * 1000));
  }
  for (const need of r.budgets) {
    const budget = now.budgets.get(need.id);
    const needed = BigInt(need.reserveMinor);
    if (budget && needed > budget.availableMinor) out.push(blocker('budget', need, 'FUNDS_SHORT', needed, budget.availableMinor, null));
  }
  if (r.workLimit !== null) {
    const limit = now.workLimits.get(r.workLimit.id);
    if (limit && limit.inUse >= limit.maxConcurrent) out.push(blocker('work_limit', r.workLimit, 'SLOTS_TAKEN', 1, limit.maxConcurrent - limit.inUse, null));
  }
  return out;
}

function blocker(resource: Blocker['resource'], need: { id: string; name: string }, reason: Blocker['reason'], needed: number | bigint, available: number | bigint, retryAtMs: number | null): Blocker {
  return { resource, id: need.id, name: need.name, reason, needed: BigInt(needed), available: BigInt(available), retryAtMs };
}

/** What a live task waits for, from its delivery and what blocks it (model.ts, taskWaits). */
export function taskWaitOf(delivery: DeliverySummary | undefined, blockers: readonly Blocker[]): TaskWait {
  if (delivery?.state === 'CLAIMED') return 'WORKER';
  if (delivery?.state !== 'READY') return 'NOTHING';
  return blockers.length > 0 ? 'RESOURCES' : 'ADMISSION';
}
