import type { Repositories } from './repositories';

/** Repositories bound to one transaction. */
export type Tx = Repositories;

/**
 * Transactions over typed repositories. Every operation is one transaction that writes its
 * state change, its events and its idempotency record together, or nothing. A store that cannot
 * reach its database rejects with StoreUnavailable (store-unavailable.ts), whatever the work.
 */
export interface Store {
  readonly kind: 'memory' | 'pglite' | 'postgres';
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /** Reads outside a transaction: cheaper (no BEGIN/COMMIT), each statement sees committed data. */
  read<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * Housekeeping the store itself needs, run by the background loop about once a second: on
   * PostgreSQL, fresh planner statistics for a queue table that grew fast (sql-store.ts). Nothing elsewhere.
   */
  maintain(): Promise<void>;
  close(): Promise<void>;
}
