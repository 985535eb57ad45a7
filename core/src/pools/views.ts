import type { PoolView, WorkLimitView } from '../schemas/pools';
import { isoFromMs } from '../time';
import type { Pool, WorkLimit } from './model';

export function poolView(p: Pool): PoolView {
  return {
    id: p.id,
    name: p.name,
    capacity: p.capacity,
    inUse: p.inUse,
    available: p.capacity - p.inUse,
    createdAt: isoFromMs(p.createdAt),
    updatedAt: isoFromMs(p.updatedAt),
  };
}

export function workLimitView(w: WorkLimit): WorkLimitView {
  return {
    id: w.id,
    name: w.name,
    maxConcurrent: w.maxConcurrent,
    inUse: w.inUse,
    available: w.maxConcurrent - w.inUse,
    createdAt: isoFromMs(w.createdAt),
    updatedAt: isoFromMs(w.updatedAt),
  };
}
