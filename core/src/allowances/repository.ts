import type { Allowance, AllowanceWaiter, Consumption, WaitLineCensus } from './model';
import type { LockOptions } from '../store/lock-options';

export interface AllowanceRepository {
  insert(allowance: Allowance): Promise<void>;
  get(spaceId: string, id: string, options?: LockOptions): Promise<Allowance | undefined>;
  getByName(spaceId: string, name: string): Promise<Allowance | undefined>;
  /** Allowances ordered by name; `afterName` is exclusive. */
  list(spaceId: string, afterName: string | null, limit: number): Promise<Allowance[]>;
  update(allowance: Allowance): Promise<void>;
  /**
   * Allowances of any space whose wakeAt is at or before `nowMs`, locked for this transaction.
   * Rows another server is already serving are skipped, so grant sweeps on several servers
   * never serve one line at once (and the row lock makes a second pass see the first's grants).
   */
  claimDue(nowMs: number, limit: number): Promise<Allowance[]>;
}

export interface AllowanceWaiterRepository {
  insert(waiter: AllowanceWaiter): Promise<void>;
  get(spaceId: string, id: string, options?: LockOptions): Promise<AllowanceWaiter | undefined>;
  update(waiter: AllowanceWaiter): Promise<void>;
  /** The WAITING waiters of an allowance in line order (by position), at most `limit`. */
  listWaiting(spaceId: string, allowanceId: string, limit: number): Promise<AllowanceWaiter[]>;
  countWaiting(spaceId: string, allowanceId: string): Promise<number>;
  countWaitingInSpace(spaceId: string): Promise<number>;
  /**
   * The metrics census (server/src/metrics/census-sampler.ts): the longest wait lines of any
   * space, at most `limit`, longest first; allowances nobody waits on are left out. In SQL it
   * reads only the partial index of WAITING rows (allowance_waiters_line).
   */
  censusLines(limit: number): Promise<WaitLineCensus[]>;
}

export interface ConsumptionRepository {
  insert(consumption: Consumption): Promise<void>;
  getByWorkKey(spaceId: string, allowanceId: string, workKey: string): Promise<Consumption | undefined>;
}
