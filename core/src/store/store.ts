import type { Repositories } from './repositories';

/** Repositories bound to one transaction. */
export type Tx = Repositories;

/**
 * Transactions over typed repositories. Every operation is one transaction that writes its
 * state change, its events and its idempotency record together, or nothing.
 */
export interface Store {
  readonly kind: 'memory' | 'pglite' | 'postgres';
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /** Reads outside a transaction: cheaper (no BEGIN/COMMIT), each statement sees committed data. */
  read<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
