/**
 * Pools and work limits: the countable resources a task names in its requirements and that
 * admission claims together with the task's delivery (docs/design/0009-pools-and-work-limits.md). Both are a fixed number
 * of units with a count in use; they differ in what a unit means. Times are epoch ms.
 */

/** `capacity` interchangeable units (GPUs, licences, connections); a task holds some while it runs. */
export interface Pool {
  id: string;
  spaceId: string;
  name: string;
  capacity: number;
  inUse: number;
  createdAt: number;
  updatedAt: number;
}

/** At most `maxConcurrent` admitted tasks naming this limit run at once; each holds one slot. */
export interface WorkLimit {
  id: string;
  spaceId: string;
  name: string;
  maxConcurrent: number;
  inUse: number;
  createdAt: number;
  updatedAt: number;
}

/**
 * Bounds of a pool's capacity and a work limit's maxConcurrent, and so of any one claim. A
 * million keeps every count far inside a 32-bit integer column, sums of claims included.
 */
export const capacityBounds = { min: 1, max: 1_000_000 } as const;
