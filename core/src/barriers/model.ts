/** Barrier state as stored. Times are epoch ms. */
export const barrierStates = ['WAITING', 'RELEASED', 'CANCELLED'] as const;
export type BarrierState = (typeof barrierStates)[number];

/** Largest target a barrier may have: arrivals of one epoch are rows, so the bound keeps an epoch small. */
export const maxBarrierTarget = 100_000;

export interface Barrier {
  id: string;
  spaceId: string;
  scopeId: string;
  /** Distinct arrivals that release an epoch. */
  target: number;
  /** Starts at 1; nextEpoch adds one and starts counting afresh. */
  epoch: number;
  state: BarrierState;
  /** Distinct arrivalKeys counted in the current epoch: the number of arrival rows of that epoch. */
  arrivals: number;
  /** When the current epoch was released; null while it is not. */
  releasedAt: number | null;
  createdAt: number;
  updatedAt: number;
}

/** One counted arrival. (spaceId, barrierId, epoch, arrivalKey) is unique: an arrival counts once. */
export interface BarrierArrival {
  spaceId: string;
  barrierId: string;
  epoch: number;
  arrivalKey: string;
  arrivedAt: number;
}

/** Position in the barrier list, which is ordered by (createdAt, id). */
export interface BarrierListPosition {
  createdAt: number;
  id: string;
}
