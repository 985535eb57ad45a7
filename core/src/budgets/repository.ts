import type { CreatedPosition } from '../paging';
import type { LockOptions } from '../store/lock-options';
import type { Budget, BudgetEntry, Reservation, ReservationState } from './model';

export interface BudgetRepository {
  insert(budget: Budget): Promise<void>;
  get(spaceId: string, id: string, options?: LockOptions): Promise<Budget | undefined>;
  getByName(spaceId: string, name: string): Promise<Budget | undefined>;
  /** Budgets ordered by name; `afterName` is exclusive. */
  list(spaceId: string, afterName: string | null, limit: number): Promise<Budget[]>;
  update(budget: Budget): Promise<void>;
  /**
   * Moves `amountMinor` from available to reserved: one conditional UPDATE that rides with the
   * COMMIT, so the budget's row lock is held only from this statement to the end of the commit,
   * not across a round trip (issue 12: one budget hot with reserves). The caller decided on the
   * budget as read, unlocked, in this transaction; when a concurrent operation took the funds
   * since, the guard finds available short and the transaction fails as raced
   * (store/raced.ts) and runs again on a fresh read.
   */
  reserve(spaceId: string, id: string, amountMinor: bigint, nowMs: number): Promise<void>;
}

export interface ReservationRepository {
  insert(reservation: Reservation): Promise<void>;
  get(spaceId: string, id: string, options?: LockOptions): Promise<Reservation | undefined>;
  update(reservation: Reservation): Promise<void>;
  /** ACTIVE reservations of a budget, oldest first. */
  listActive(spaceId: string, budgetId: string): Promise<Reservation[]>;
  /** A budget's reservations in `states` (any when null), oldest first (createdAt, then id), after `after`. */
  list(spaceId: string, budgetId: string, states: readonly ReservationState[] | null, after: CreatedPosition | null, limit: number): Promise<Reservation[]>;
  /**
   * ACTIVE reservations of any space whose settleBy is at or before `nowMs` and whose overdue
   * event is not yet emitted, locked for this transaction. Rows another server is already
   * sweeping are skipped, so sweepers on several servers never emit one event twice.
   */
  claimOverdue(nowMs: number, limit: number): Promise<Reservation[]>;
}

export interface BudgetEntryRepository {
  insert(entry: BudgetEntry): Promise<void>;
  getByWorkKey(spaceId: string, budgetId: string, workKey: string): Promise<BudgetEntry | undefined>;
}
