import { MemoryStore, type Store } from '@baton/core';
import { migrate } from './sql/migrate';
import { PgDriver, type PoolMode } from './sql/pg-driver';
import { PgliteDriver } from './sql/pglite-driver';
import { SqlStore } from './sql/sql-store';

export type StoreConfig =
  | { kind: 'memory' }
  /**
   * PostgreSQL through `pg`; `url` is a postgres:// connection string, `poolMax` its pool's size
   * (10), `poolMode` whether its connections keep their sessions (sql/pg-driver.ts).
   */
  | { kind: 'postgres'; url: string; poolMax?: number; poolMode?: PoolMode }
  /** Embedded PGlite persisted under `dataDir`, or in memory without one. */
  | { kind: 'pglite'; dataDir?: string };

/** Opens the configured store; SQL stores are migrated before they are returned. */
export async function openStore(config: StoreConfig): Promise<Store> {
  switch (config.kind) {
    case 'memory':
      return new MemoryStore();
    case 'postgres':
      return openMigrated(new PgDriver(config.url, { ...(config.poolMax === undefined ? {} : { max: config.poolMax }), ...(config.poolMode === undefined ? {} : { poolMode: config.poolMode }) }));
    case 'pglite':
      return openMigrated(await PgliteDriver.open(config.dataDir === undefined ? {} : { dataDir: config.dataDir }));
  }
}

async function openMigrated(driver: PgDriver | PgliteDriver): Promise<SqlStore> {
  try {
    await migrate(driver);
  } catch (error) {
    await driver.close().catch(() => undefined);
    throw error;
  }
  return new SqlStore(driver);
}
