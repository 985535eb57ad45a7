import type { Pool, WorkLimit } from './model';

/**
 * Pools and work limits: named counts of units in use under a fixed limit. A claim and a
 * release are each one atomic step (one statement in SQL), so concurrent admissions can never
 * push inUse past the limit or below 0, and no lock is held between statements. Who holds how
 * many units (grant rows, for renew and lease expiry) arrives with admission.
 */
export interface CapacityRepository<T> {
  /** False, writing nothing, when the space already has one of that name (a concurrent create won). */
  insert(row: T): Promise<boolean>;
  get(spaceId: string, id: string): Promise<T | undefined>;
  /** Requirements name pools and work limits; submit and admission resolve them here. */
  getByName(spaceId: string, name: string): Promise<T | undefined>;
  /** Ordered by name; `afterName` is exclusive. */
  list(spaceId: string, afterName: string | null, limit: number): Promise<T[]>;
  /** Adds `units` to inUse when they fit under the limit: the updated row, else undefined (also for an unknown id). */
  claim(spaceId: string, id: string, units: number, nowMs: number): Promise<T | undefined>;
  /** Takes `units` off inUse: the updated row. More than is in use, or an unknown id, is a bug (InvariantViolation). */
  release(spaceId: string, id: string, units: number, nowMs: number): Promise<T>;
}

export type PoolRepository = CapacityRepository<Pool>;

export type WorkLimitRepository = CapacityRepository<WorkLimit>;
