import type { LockOptions } from '../store/lock-options';
import type { Barrier, BarrierArrival, BarrierListPosition, BarrierState } from './model';

export interface BarrierRepository {
  insert(barrier: Barrier): Promise<void>;
  get(spaceId: string, id: string, options?: LockOptions): Promise<Barrier | undefined>;
  /** Barriers in (createdAt, id) order after `after` (exclusive), in any of `states` (any state when null). */
  list(spaceId: string, states: readonly BarrierState[] | null, after: BarrierListPosition | null, limit: number): Promise<Barrier[]>;
  update(barrier: Barrier): Promise<void>;
  /** (spaceId, barrierId, epoch, arrivalKey) is unique: a second insert of one arrival throws. */
  insertArrival(arrival: BarrierArrival): Promise<void>;
  getArrival(spaceId: string, barrierId: string, epoch: number, arrivalKey: string): Promise<BarrierArrival | undefined>;
  countArrivals(spaceId: string, barrierId: string, epoch: number): Promise<number>;
}
