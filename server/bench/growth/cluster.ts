/**
 * The bench's own PostgreSQL cluster (server/src/testing/postgres-cluster.ts) with
 * pg_stat_statements and auto_explain loaded, and what the bench reads from it: statement
 * counters of one database (deltas around each measured phase) and auto_explain's plans from the
 * server log.
 */
import { open, stat } from 'node:fs/promises';
import pg from 'pg';
import { PostgresCluster } from '../../src/testing/postgres-cluster';

export async function startCluster(port: number): Promise<PostgresCluster> {
  return PostgresCluster.create(port, {
    shared_preload_libraries: 'pg_stat_statements,auto_explain',
    'pg_stat_statements.track': 'top',
    'pg_stat_statements.max': '10000',
    // Room for a 1M-row fill without checkpoints forced half-way, and a cache that holds the
    // hot indexes (the machine has memory to spare; the figures count hit + read anyway).
    shared_buffers: '512MB',
    max_wal_size: '8GB',
    // auto_explain.log_min_duration is not set here: a command-line setting outranks ALTER SYSTEM,
    // with which the explain pass turns it on (0) and off (the default, -1).
    'auto_explain.log_analyze': 'on',
    'auto_explain.log_buffers': 'on',
    'auto_explain.log_nested_statements': 'on',
    'auto_explain.log_timing': 'on',
    'auto_explain.log_format': 'text',
    log_min_messages: 'warning',
    lc_messages: 'C',
  });
}

/** Counters of one normalized statement (pg_stat_statements), or their change over a phase. */
export interface StatementCounters {
  query: string;
  calls: number;
  rows: number;
  hit: number;
  read: number;
  dirtied: number;
  written: number;
  execMs: number;
}

export type Snapshot = Map<string, StatementCounters>;

/** A connection to the cluster's `postgres` database: its own statements never land in the measured database's counters. */
export class ClusterMonitor {
  private constructor(private readonly client: pg.Client) {}

  static async connect(cluster: PostgresCluster): Promise<ClusterMonitor> {
    const client = new pg.Client({ connectionString: cluster.url });
    await client.connect();
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    return new ClusterMonitor(client);
  }

  async version(): Promise<string> {
    const { rows } = await this.client.query('SELECT version() AS v');
    return String(rows[0].v).split(',')[0]!;
  }

  async databaseOid(name: string): Promise<number> {
    const { rows } = await this.client.query('SELECT oid FROM pg_database WHERE datname = $1', [name]);
    if (rows.length !== 1) throw new Error(`no database ${name}`);
    return Number(rows[0].oid);
  }

  /**
   * The statements of database `dbid`, keyed by their normalized text: a queryid depends on the
   * tables' OIDs, which differ from one level's database to the next, the text does not.
   */
  async snapshot(dbid: number): Promise<Snapshot> {
    const { rows } = await this.client.query(
      `SELECT query, sum(calls)::float8 AS calls, sum(rows)::float8 AS rows, sum(shared_blks_hit)::float8 AS hit, sum(shared_blks_read)::float8 AS read,
              sum(shared_blks_dirtied)::float8 AS dirtied, sum(shared_blks_written)::float8 AS written, sum(total_exec_time)::float8 AS exec_ms
         FROM pg_stat_statements WHERE dbid = $1 AND toplevel GROUP BY query`,
      [dbid],
    );
    const snapshot: Snapshot = new Map();
    for (const r of rows) {
      snapshot.set(r.query, { query: r.query, calls: r.calls, rows: r.rows, hit: r.hit, read: r.read, dirtied: r.dirtied, written: r.written, execMs: r.exec_ms });
    }
    return snapshot;
  }

  /** auto_explain for every statement of every session (ALTER SYSTEM and a reload reach open pool connections too). */
  async explainEverything(on: boolean): Promise<void> {
    await this.client.query(on ? 'ALTER SYSTEM SET auto_explain.log_min_duration = 0' : 'ALTER SYSTEM RESET auto_explain.log_min_duration');
    await this.client.query('SELECT pg_reload_conf()');
    // Backends take the new setting at their next command; give the postmaster's SIGHUP a moment.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const { rows } = await this.client.query("SELECT current_setting('auto_explain.log_min_duration') AS v");
    const wanted = on ? '0' : '-1';
    if (String(rows[0].v) !== wanted) throw new Error(`auto_explain.log_min_duration is ${rows[0].v}, expected ${wanted}`);
  }

  close(): Promise<void> {
    return this.client.end();
  }
}

export function delta(before: Snapshot, after: Snapshot): StatementCounters[] {
  const out: StatementCounters[] = [];
  for (const [query, a] of after) {
    const b = before.get(query);
    const d: StatementCounters = {
      query,
      calls: a.calls - (b?.calls ?? 0),
      rows: a.rows - (b?.rows ?? 0),
      hit: a.hit - (b?.hit ?? 0),
      read: a.read - (b?.read ?? 0),
      dirtied: a.dirtied - (b?.dirtied ?? 0),
      written: a.written - (b?.written ?? 0),
      execMs: a.execMs - (b?.execMs ?? 0),
    };
    if (d.calls > 0) out.push(d);
  }
  return out;
}

/** One auto_explain entry: the statement's text and its plan with actual rows and buffers. */
export interface LoggedPlan {
  durationMs: number;
  query: string;
  plan: string;
}

/** The server log's length now: read again later from here to get what was logged in between. */
export async function logOffset(path: string): Promise<number> {
  return (await stat(path)).size;
}

export async function readLogFrom(path: string, offset: number): Promise<string> {
  const handle = await open(path, 'r');
  try {
    const size = (await handle.stat()).size;
    const buffer = Buffer.alloc(size - offset);
    await handle.read(buffer, 0, buffer.length, offset);
    return buffer.toString('utf8');
  } finally {
    await handle.close();
  }
}

const entryStart = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[.\d]* \S+ \[\d+\] (\w+):  (.*)$/;

/** auto_explain's text-format entries: `LOG:  duration: … ms  plan:` then tab-indented lines (Query Text, then the plan). */
export function parsePlans(log: string): LoggedPlan[] {
  const plans: LoggedPlan[] = [];
  let current: { durationMs: number; lines: string[] } | undefined;
  const finish = () => {
    if (!current) return;
    const lines = current.lines;
    // The plan's top node is the first unindented line with costs; everything before is the query text.
    const top = lines.findIndex((l) => /^\S.*  \(cost=[\d.]+\.\.[\d.]+ rows=\d+ width=\d+\)/.test(l));
    const split = top >= 0 ? top : lines.length;
    const query = lines.slice(0, split).join('\n').replace(/^Query Text:\s*/, '').trim();
    plans.push({ durationMs: current.durationMs, query, plan: lines.slice(split).join('\n').trimEnd() });
    current = undefined;
  };
  for (const line of log.split('\n')) {
    const m = entryStart.exec(line);
    if (m) {
      finish();
      const d = /^duration: ([\d.]+) ms {2}plan:$/.exec(m[2]!);
      if (m[1] === 'LOG' && d) current = { durationMs: Number(d[1]), lines: [] };
      continue;
    }
    if (current && line.startsWith('\t')) current.lines.push(line.slice(1));
    else if (current && line.trim() !== '') current.lines.push(line);
  }
  finish();
  return plans;
}
