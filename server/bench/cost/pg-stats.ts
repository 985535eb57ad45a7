/**
 * What PostgreSQL did for a run, from its own counters in the bench's cluster: statements from
 * pg_stat_statements (loaded with shared_preload_libraries, track = all), rows written from
 * pg_stat_user_tables (n_tup_ins + n_tup_upd + n_tup_del), WAL from pg_stat_wal.
 *
 * Backends hand their table and WAL counters to the shared statistics only now and then (at most
 * once a second, and when idle up to 10 s later) and always when they exit: a run's counters are
 * read once every connection of the system under test has closed. pg_stat_statements counts
 * each statement when it ends, at once. The bench's own statements are left out: resets and
 * reads run on the `postgres` database, the probe a graphile drain polls with carries
 * `bench probe` in its text.
 */
import pg from 'pg';
import { parentPid } from './proc-cpu';

export const statStatementsSettings = { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all', 'pg_stat_statements.max': '10000', track_io_timing: 'on' };

/** Marks a statement of the bench itself (left out of the counts). */
export const probeTag = '/* bench probe */';

export interface PgCounters {
  /** Statements sent by clients (pg_stat_statements toplevel calls); BEGIN and COMMIT count. */
  statements: number;
  /** Statements run inside functions (toplevel false): graphile-worker's add_job, get_job, ... */
  nestedStatements: number;
  rowsWritten: number;
  /** Execution time of every client-sent statement: a nested statement's time is inside its caller's. */
  toplevelMs: number;
  walBytes: number;
  walRecords: number;
  /** Full-page images: the first change of a page after a checkpoint writes the whole page. */
  walFullPages: number;
  top: TopStatement[];
}

export interface TopStatement {
  query: string;
  calls: number;
  totalMs: number;
  meanMs: number;
  rows: number;
  toplevel: boolean;
}

/** `work` on a connection of its own, closed after (so its counters reach the shared statistics). */
export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const databaseUrl = (clusterUrl: string, database: string): string => {
  const url = new URL(clusterUrl);
  url.pathname = `/${database}`;
  return url.toString();
};

export async function createDatabase(clusterUrl: string, database: string): Promise<string> {
  await withClient(clusterUrl, async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`);
    await c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  });
  return databaseUrl(clusterUrl, database);
}

export async function dropDatabase(clusterUrl: string, database: string): Promise<void> {
  await withClient(clusterUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`));
}

/** The postmaster's pid: the parent of a backend, read while that backend is there. */
export async function postmasterPid(clusterUrl: string): Promise<number> {
  return withClient(clusterUrl, async (c) => parentPid(Number((await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid)));
}

/** Zeroes the counters a run is read from: the database's table counters, statements, WAL. */
export async function resetCounters(clusterUrl: string, database: string): Promise<void> {
  await withClient(databaseUrl(clusterUrl, database), (c) => c.query('SELECT pg_stat_reset()'));
  await withClient(clusterUrl, async (c) => {
    await c.query('SELECT pg_stat_statements_reset()');
    await c.query(`SELECT pg_stat_reset_shared('wal')`);
  });
}

/** Reads the counters once the run's connections have closed (see above); `topN` statements by total time. */
export async function readCounters(clusterUrl: string, database: string, topN: number): Promise<PgCounters> {
  const fromCluster = await withClient(clusterUrl, async (c) => {
    const oid = Number((await c.query('SELECT oid FROM pg_database WHERE datname = $1', [database])).rows[0].oid);
    const own = `dbid = ${oid} AND query NOT LIKE '%bench probe%'`;
    const calls = (await c.query(`SELECT coalesce(sum(calls) FILTER (WHERE toplevel), 0) AS top, coalesce(sum(calls) FILTER (WHERE NOT toplevel), 0) AS nested, coalesce(sum(total_exec_time) FILTER (WHERE toplevel), 0) AS top_ms FROM pg_stat_statements WHERE ${own}`)).rows[0];
    const wal = (await c.query('SELECT wal_bytes, wal_records, wal_fpi FROM pg_stat_wal')).rows[0];
    const top = await c.query(
      `SELECT query, calls, total_exec_time AS total, mean_exec_time AS mean, rows, toplevel FROM pg_stat_statements WHERE ${own} ORDER BY total_exec_time DESC LIMIT $1`,
      [topN],
    );
    return {
      statements: Number(calls.top),
      nestedStatements: Number(calls.nested),
      toplevelMs: Number(calls.top_ms),
      walBytes: Number(wal.wal_bytes),
      walRecords: Number(wal.wal_records),
      walFullPages: Number(wal.wal_fpi),
      top: top.rows.map((r) => ({ query: String(r.query), calls: Number(r.calls), totalMs: Number(r.total), meanMs: Number(r.mean), rows: Number(r.rows), toplevel: r.toplevel === true })),
    };
  });
  const rowsWritten = await withClient(databaseUrl(clusterUrl, database), async (c) =>
    Number((await c.query('SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) AS n FROM pg_stat_user_tables')).rows[0].n),
  );
  return { ...fromCluster, rowsWritten };
}
