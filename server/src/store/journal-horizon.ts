import type { Store } from '@baton/core';
import { countBehindHorizon } from './sql/repositories/events';
import { SqlStore } from './sql/sql-store';

/**
 * Committed events of a space that journal reads hold back for now (docs/event-journal.md, "The
 * caveat"). Only PostgreSQL has such a horizon: it is shared with every connection to the server,
 * while the memory store and PGlite's one connection return everything committed.
 */
export async function eventsBehindHorizon(store: Store, spaceId: string): Promise<number> {
  if (!(store instanceof SqlStore) || store.kind !== 'postgres') return 0;
  return countBehindHorizon(store.driver, spaceId);
}

/**
 * How long the oldest transaction holding an xid in another database of the PostgreSQL server has
 * been open, in ms (0 if none, or not on PostgreSQL): how far it can be holding this database's
 * journal back. For checkers that run on a shared server (the simulator's --store pg).
 */
export async function oldestForeignWriterMs(store: Store): Promise<number> {
  if (!(store instanceof SqlStore) || store.kind !== 'postgres') return 0;
  const [row] = await store.driver.query<{ ms: number }>(
    `SELECT coalesce(max(extract(epoch FROM clock_timestamp() - xact_start) * 1000), 0)::float8 AS ms
     FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND datname IS DISTINCT FROM current_database()`,
  );
  return row!.ms;
}
