import type { LockOptions } from '../store/lock-options';
import type { Timer, TimerFilter, TimerListPosition, TimerState } from './model';

export interface TimerRepository {
  /** False, writing nothing, when the space already has a timer of that timerKey (a concurrent arm won). */
  insert(timer: Timer): Promise<boolean>;
  get(spaceId: string, id: string, options?: LockOptions): Promise<Timer | undefined>;
  getByKey(spaceId: string, timerKey: string): Promise<Timer | undefined>;
  /** Timers in (createdAt, id) order after `after` (exclusive), filtered by `filter`. */
  list(spaceId: string, filter: TimerFilter, after: TimerListPosition | null, limit: number): Promise<Timer[]>;
  /**
   * Writes a move of an ARMED timer (fired, deferred, cancelled). The stored row must still be
   * ARMED: in SQL the statement fails the transaction otherwise, so no timer leaves ARMED twice.
   */
  update(timer: Timer): Promise<void>;
  /** ARMED timers of the space, counted up to `cap`: an arm needs to know only whether maxArmedTimers is reached. */
  countArmed(spaceId: string, cap: number): Promise<number>;
  /** Timers of one scopeId in the space, counted by state (states with none are left out). */
  countByState(spaceId: string, scopeId: string): Promise<{ state: TimerState; count: number }[]>;
  /**
   * The sweep's claim: ARMED timers of any space due (dueAt) at or before `nowMs`, oldest dueAt
   * first, at most `limit`, locked for this transaction. Rows another transaction holds (another
   * server's sweep, a cancel) are skipped (SKIP LOCKED), never waited on.
   */
  claimDue(nowMs: number, limit: number): Promise<Timer[]>;
  /**
   * Up to `limit` ARMED timers of the space whose scopeId is one of `scopeIds`, locked for this
   * transaction in id order. Rows another transaction holds are waited for, not skipped: a
   * caller cancelling a scope must not miss one; one that fired meanwhile is no longer ARMED.
   */
  lockArmedInScopes(spaceId: string, scopeIds: readonly string[], limit: number): Promise<Timer[]>;
}
