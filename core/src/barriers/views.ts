import type { BarrierView } from '../schemas/barriers';
import { isoFromMs } from '../time';
import type { Barrier } from './model';

/**
 * The barrier as clients see it. It carries the count of arrivals, not their keys: an epoch
 * may hold up to 100,000 of them. The keys are in the journal (barrier.arrived events).
 */
export function barrierView(b: Barrier): BarrierView {
  return {
    id: b.id,
    scopeId: b.scopeId,
    state: b.state,
    epoch: b.epoch,
    target: b.target,
    arrivals: b.arrivals,
    releasedAt: b.releasedAt === null ? null : isoFromMs(b.releasedAt),
    createdAt: isoFromMs(b.createdAt),
    updatedAt: isoFromMs(b.updatedAt),
  };
}
