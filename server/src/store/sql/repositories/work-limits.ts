import { assertWorkLimit, type WorkLimit, type WorkLimitRepository } from '@baton/core';
import type { SqlQueryable } from '../driver';
import { sqlCapacity, type CapacityTable } from './pools';

/** A work limit is a pool whose units are slots, one per running task: the same statements. */
const workLimits: CapacityTable<WorkLimit> = {
  table: 'work_limits',
  limitColumn: 'max_concurrent',
  fromRow: (counted, maxConcurrent) => ({ ...counted, maxConcurrent }),
  limitOf: (w) => w.maxConcurrent,
  check: assertWorkLimit,
};

export const sqlWorkLimits = (q: SqlQueryable): WorkLimitRepository => sqlCapacity(q, workLimits);
