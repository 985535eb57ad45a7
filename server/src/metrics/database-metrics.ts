import type { Store } from '@baton/core';
import { Gauge, type Registry } from 'prom-client';
import { PgDriver } from '../store/sql/pg-driver';
import { SqlStore } from '../store/sql/sql-store';

/** What only a store on PostgreSQL can tell: its pool, and how far back the journal's horizon is held. */
export interface DatabaseProbes {
  /** Seconds since the oldest transaction holding an xid began, anywhere on the PostgreSQL server; 0 when none is open. */
  horizonLagSeconds(): Promise<number>;
}

/** The pg driver under `store`, when it is a SqlStore on PostgreSQL (memory and PGlite have no pool and no horizon to watch). */
function pgDriverOf(store: Store): PgDriver | undefined {
  return store instanceof SqlStore && store.driver instanceof PgDriver ? store.driver : undefined;
}

/**
 * The pool's gauges, read from the pool's own counters at each scrape (no statement), and the
 * horizon probe for the census sampler. Undefined off PostgreSQL.
 */
export function databaseMetrics(store: Store, registry: Registry): DatabaseProbes | undefined {
  const driver = pgDriverOf(store);
  if (!driver) return undefined;
  const gauge = (name: string, help: string, read: (stats: ReturnType<PgDriver['poolStats']>) => number): void => {
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read(driver.poolStats()));
      },
    });
  };
  gauge('baton_db_pool_connections', 'Connections the PostgreSQL pool holds open (busy and idle).', (s) => s.total);
  gauge('baton_db_pool_idle_connections', 'Open pool connections not checked out.', (s) => s.idle);
  gauge('baton_db_pool_waiting_checkouts', 'Transactions and statements queued for a pool connection: above 0 for long, the pool is too small or the database too slow.', (s) => s.waiting);
  return { horizonLagSeconds: () => horizonLagSeconds(driver) };
}

/**
 * The journal's readers see an event only once every transaction that held an xid when it was
 * written has ended, in any database of the server (docs/event-journal.md, "The caveat"). So the
 * age of the oldest such transaction, or prepared transaction, is how long events may stay
 * invisible. Read-only transactions hold no xid and do not count; this statement holds none.
 * Seeing other roles' sessions needs pg_read_all_stats (or superuser): without it their rows show
 * no xid and a culprit of another role goes unseen.
 */
async function horizonLagSeconds(driver: PgDriver): Promise<number> {
  const [row] = await driver.query<{ lag: unknown }>(
    `SELECT coalesce(extract(epoch FROM clock_timestamp() - least(
       (SELECT min(xact_start) FROM pg_stat_activity WHERE backend_xid IS NOT NULL),
       (SELECT min(prepared) FROM pg_prepared_xacts))), 0)::float8 AS lag`,
  );
  return Math.max(0, Number(row?.lag ?? 0));
}
