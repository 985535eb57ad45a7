import type { Store, Tx } from '@baton/core';
import type { SqlDriver } from './driver';
import { sqlRepositories } from './repositories/index';

/**
 * The Store over PostgreSQL or PGlite: the same repositories and SQL on both, only the driver
 * differs. Transactions run at READ COMMITTED; the repositories take the row and advisory
 * locks that the operations' correctness relies on (SELECT ... FOR UPDATE in lock order).
 */
export class SqlStore implements Store {
  readonly kind: 'postgres' | 'pglite';

  constructor(readonly driver: SqlDriver) {
    this.kind = driver.kind;
  }

  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.driver.transaction((q) => work(sqlRepositories(q)));
  }

  /** Each statement runs on its own (autocommit) and sees what was committed when it started. */
  read<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return work(sqlRepositories(this.driver));
  }

  close(): Promise<void> {
    return this.driver.close();
  }
}
