import { assert } from '../assert';
import { capacityBounds, type Pool, type WorkLimit } from './model';

/**
 * Claims and releases as pure functions over stored state. The memory store applies them; the
 * SQL store does the same in one statement and checks what it returned with the assertions
 * below. A count outside 0..limit is a bug in Baton, so it fails loudly instead of committing.
 */

/** What a claim or release may move: a whole number of units within the capacity bounds. */
export function assertCapacityUnits(units: number): void {
  assert(Number.isSafeInteger(units) && units >= capacityBounds.min && units <= capacityBounds.max, `units ${units} must be an integer from ${capacityBounds.min} to ${capacityBounds.max}`);
}

function assertInUse(what: string, id: string, inUse: number, limit: number): void {
  assert(Number.isSafeInteger(limit) && limit >= capacityBounds.min && limit <= capacityBounds.max, `${what} ${id}: limit ${limit} out of bounds`);
  assert(Number.isSafeInteger(inUse) && inUse >= 0, `${what} ${id}: ${inUse} in use is negative`);
  assert(inUse <= limit, `${what} ${id}: ${inUse} in use exceeds its limit ${limit}`);
}

export const assertPool = (p: Pool): void => assertInUse('pool', p.id, p.inUse, p.capacity);
export const assertWorkLimit = (w: WorkLimit): void => assertInUse('work limit', w.id, w.inUse, w.maxConcurrent);

export const limitOfPool = (p: Pool): number => p.capacity;
export const limitOfWorkLimit = (w: WorkLimit): number => w.maxConcurrent;

interface Counted {
  id: string;
  inUse: number;
  updatedAt: number;
}

/** The row with `units` more in use, or undefined when they do not fit under `limit`. */
export function claimUnits<T extends Counted>(row: T, limit: number, units: number, nowMs: number): T | undefined {
  assertCapacityUnits(units);
  if (units > limit - row.inUse) return undefined;
  return { ...row, inUse: row.inUse + units, updatedAt: nowMs };
}

/**
 * The row with `units` fewer in use. Only units some holder claimed are ever released (the
 * admission issue's grant rows record who holds how many), so releasing more is a bug.
 */
export function releaseUnits<T extends Counted>(row: T, units: number, nowMs: number): T {
  assertCapacityUnits(units);
  assert(units <= row.inUse, `release of ${units} units from ${row.id}, which has only ${row.inUse} in use`);
  return { ...row, inUse: row.inUse - units, updatedAt: nowMs };
}
