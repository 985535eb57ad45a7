/**
 * Shared machinery for `npm run bench -- <name>`: flags, one fresh store per run, a real Baton
 * server on a loopback port, a tenant made through the admin API, closed-loop load and latency
 * figures. Benchmarks (budgets.ts, ...) only describe what one client iteration does.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { SystemClock, type Store } from '@baton/core';
import pg from 'pg';
import { Pool } from 'undici';
import { createBaton } from '../src/host/baton';
import { openStore } from '../src/store/open-store';

export type StoreKind = 'pglite' | 'postgres';

export interface BenchOptions {
  seconds: number;
  warmupSeconds: number;
  clients: number;
  stores: StoreKind[];
}

export interface Benchmark {
  description: string;
  run(options: BenchOptions): Promise<void>;
}

export class BenchFailure extends Error {}

// ---------------------------------------------------------------------------------------------
// Flags

export function parseOptions(args: string[]): BenchOptions {
  const options: BenchOptions = { seconds: 10, warmupSeconds: 2, clients: 16, stores: ['pglite', 'postgres'] };
  for (let i = 0; i < args.length; i++) {
    const flag = args[i];
    const value = args[i + 1];
    if (value === undefined) throw new BenchFailure(`${flag} needs a value`);
    i++;
    if (flag === '--seconds') options.seconds = positive(flag, value, 600);
    else if (flag === '--warmup') options.warmupSeconds = positive(flag, value, 60, true);
    else if (flag === '--clients') options.clients = positive(flag, value, 256);
    else if (flag === '--store') {
      if (value === 'all') options.stores = ['pglite', 'postgres'];
      else if (value === 'pglite' || value === 'postgres') options.stores = [value];
      else throw new BenchFailure(`--store must be pglite, postgres or all, not ${value}`);
    } else throw new BenchFailure(`unknown flag ${flag} (flags: --seconds N, --warmup N, --clients N, --store pglite|postgres|all)`);
  }
  return options;
}

/** Caps keep a mistyped flag from turning a benchmark into an hour-long load test. */
function positive(flag: string, value: string, max: number, zeroOk = false): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < (zeroOk ? 0 : 1) || n > max) throw new BenchFailure(`${flag} must be an integer from ${zeroOk ? 0 : 1} to ${max}`);
  return n;
}

// ---------------------------------------------------------------------------------------------
// Stores: each run gets a store nobody else uses, removed afterwards.

export interface OpenedStore {
  store: Store;
  label: string;
  cleanup(): Promise<void>;
}

/** A fresh PGlite data directory on disk (as `npm start` uses it), deleted after the run. */
export async function openPglite(): Promise<OpenedStore> {
  const dataDir = await mkdtemp(join(tmpdir(), 'baton-bench-'));
  try {
    const store = await openStore({ kind: 'pglite', dataDir });
    return { store, label: `pglite (${dataDir})`, cleanup: () => rm(dataDir, { recursive: true, force: true }) };
  } catch (error) {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
}

const defaultPostgresUrl = 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * A fresh, uniquely named database on the PostgreSQL server of DATABASE_URL (or the local
 * default), dropped after the run. The server URL is only used to CREATE and DROP that one
 * database: existing databases are never written. Undefined when the server is unreachable.
 */
export async function openPostgres(): Promise<OpenedStore | undefined> {
  const serverUrl = process.env.DATABASE_URL || defaultPostgresUrl;
  const admin = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 3_000 });
  try {
    await admin.connect();
  } catch (error) {
    console.log(`postgres: skipped, ${redact(serverUrl)} is unreachable (${(error as Error).message})`);
    await admin.end().catch(() => {});
    return undefined;
  }
  const database = `baton_bench_${Date.now()}_${randomBytes(4).toString('hex')}`;
  const dropDatabase = async (): Promise<void> => {
    // FORCE ends any connection left behind by a failed run; it only ever names our database.
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await admin.end();
  };
  try {
    await admin.query(`CREATE DATABASE "${database}"`);
    const url = new URL(serverUrl);
    url.pathname = `/${database}`;
    const store = await openStore({ kind: 'postgres', url: url.toString() });
    return { store, label: `postgres (${redact(url.toString())})`, cleanup: dropDatabase };
  } catch (error) {
    await dropDatabase().catch(() => {});
    throw error;
  }
}

function redact(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

// ---------------------------------------------------------------------------------------------
// A real server over HTTP on loopback, and a tenant created the way an operator would.

export interface Target {
  baseUrl: string;
  /** The client side: one keep-alive connection per concurrent client. */
  http: Pool;
  spaceId: string;
  key: string;
  /** GET/POST under /v1/spaces/{spaceId}, expecting `status`; returns the parsed body. */
  call(method: 'GET' | 'POST', path: string, expected: number, body?: unknown, headers?: Record<string, string>): Promise<any>;
  close(): Promise<void>;
}

export async function startTarget(store: Store, connections: number): Promise<Target> {
  const adminToken = randomBytes(24).toString('hex');
  const baton = await createBaton({ store, clock: new SystemClock(), adminToken, bootstrap: false });
  // The background sweep runs as under `npm start`, so its cost is part of the figures.
  baton.background.start();
  const baseUrl = await baton.app.listen({ host: '127.0.0.1', port: 0 });
  // Bounded: no request may hang a run; 10 s is far above any latency seen here.
  const http = new Pool(baseUrl, { connections, pipelining: 1, headersTimeout: 10_000, bodyTimeout: 10_000 });

  const request = async (method: 'GET' | 'POST', path: string, expected: number, headers: Record<string, string>, body?: unknown): Promise<any> => {
    const res = await http.request({
      method,
      path,
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.body.text(); // always read: an unread body would stall the connection
    if (res.statusCode !== expected) throw new BenchFailure(`${method} ${path}: expected ${expected}, got ${res.statusCode} ${text.slice(0, 300)}`);
    return text ? JSON.parse(text) : undefined;
  };

  const asAdmin = { authorization: `Bearer ${adminToken}` };
  // ENTERPRISE with no caps: a benchmark measures the store and the server, not plan limits.
  const noCaps = { operationsPerMonth: null, agentsAtOnce: null, requestsPerMinute: null, activeRuns: null, activeTasks: null };
  const org = await request('POST', '/admin/v1/orgs', 201, asAdmin, { name: 'bench', plan: 'ENTERPRISE', limits: noCaps });
  const space = await request('POST', `/admin/v1/orgs/${org.id}/spaces`, 201, asAdmin, { name: 'bench' });
  const created = await request('POST', `/admin/v1/orgs/${org.id}/keys`, 201, asAdmin, { name: 'bench' });
  const key = created.secret as string;
  const asKey = { authorization: `Bearer ${key}` };

  return {
    baseUrl,
    http,
    spaceId: space.id,
    key,
    call: (method, path, expected, body, headers = {}) => request(method, `/v1/spaces/${space.id}${path}`, expected, { ...asKey, ...headers }, body),
    close: async () => {
      await http.close();
      await baton.drainAndClose(); // also closes the store
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Closed-loop load: N clients, each running one iteration after another.

/** Latency samples per request type; percentiles by nearest rank over all measured samples. */
export class Latencies {
  private readonly samples = new Map<string, number[]>();

  add(label: string, ms: number): void {
    let list = this.samples.get(label);
    if (!list) this.samples.set(label, (list = []));
    list.push(ms);
  }

  count(label: string): number {
    return this.samples.get(label)?.length ?? 0;
  }

  labels(): string[] {
    return [...this.samples.keys()];
  }

  percentile(label: string, p: number): number {
    const list = [...(this.samples.get(label) ?? [])].sort((a, b) => a - b);
    if (list.length === 0) return NaN;
    return list[Math.min(list.length - 1, Math.ceil((p / 100) * list.length) - 1)]!;
  }
}

/** What an iteration uses to time its requests; only requests inside the measured phase count. */
export type Timed = <T>(label: string, request: () => Promise<T>) => Promise<T>;

export interface LoadResult {
  measuredSeconds: number;
  /** Iterations that started and finished inside the measured phase. */
  measuredIterations: number;
  /** Every iteration that completed, warm-up and tail included (for end-of-run checks). */
  completedIterations: number;
  latencies: Latencies;
  errors: number;
  firstErrors: string[];
}

/** At most this many failures before the load stops: a broken server should fail fast, not spin. */
const maxErrors = 100;
let stopRequested = false;
/** Ctrl-C ends the load early so clean-up (temporary directory, database) still runs. */
export function stopOnInterrupt(): void {
  process.once('SIGINT', () => {
    console.log('\ninterrupted: stopping load and cleaning up');
    stopRequested = true;
  });
}

/**
 * Runs `clients` loops of `iteration` for warm-up then the measured phase. Throughput counts
 * only iterations wholly inside the measured window, so ramp-up and the tail are left out;
 * iterations still in flight at the end finish before this returns.
 */
export async function runLoad(
  options: Pick<BenchOptions, 'clients' | 'seconds' | 'warmupSeconds'>,
  iteration: (client: number, n: number, timed: Timed) => Promise<void>,
): Promise<LoadResult> {
  const latencies = new Latencies();
  const start = performance.now();
  const measureFrom = start + options.warmupSeconds * 1000;
  const measureTo = measureFrom + options.seconds * 1000;
  let measuredIterations = 0;
  let completedIterations = 0;
  let errors = 0;
  const firstErrors: string[] = [];

  const inWindow = (t0: number, t1: number): boolean => t0 >= measureFrom && t1 <= measureTo;
  const timed: Timed = async (label, request) => {
    const t0 = performance.now();
    const result = await request();
    const t1 = performance.now();
    if (inWindow(t0, t1)) latencies.add(label, t1 - t0);
    return result;
  };

  const loop = async (client: number): Promise<void> => {
    for (let n = 0; !stopRequested && errors < maxErrors && performance.now() < measureTo; n++) {
      const t0 = performance.now();
      try {
        await iteration(client, n, timed);
        completedIterations++;
        if (inWindow(t0, performance.now())) measuredIterations++;
      } catch (error) {
        errors++;
        if (firstErrors.length < 5) firstErrors.push(error instanceof Error ? error.message : String(error));
      }
    }
  };
  await Promise.all(Array.from({ length: options.clients }, (_, i) => loop(i)));
  if (stopRequested) throw new BenchFailure('interrupted');
  const measuredSeconds = (Math.min(performance.now(), measureTo) - measureFrom) / 1000;
  return { measuredSeconds, measuredIterations, completedIterations, latencies, errors, firstErrors };
}

export const uniqueRunId = (): string => randomUUID().slice(0, 8);

export const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : '-');

/**
 * Opens each selected store in turn, starts a server on it, runs `fn`, and always cleans up
 * (server, store, temporary directory or database) even when `fn` fails.
 */
export async function forEachStore<R>(options: BenchOptions, fn: (target: Target, kind: StoreKind) => Promise<R>): Promise<Array<{ kind: StoreKind; result: R }>> {
  const results: Array<{ kind: StoreKind; result: R }> = [];
  for (const kind of options.stores) {
    const opened = kind === 'pglite' ? await openPglite() : await openPostgres();
    if (!opened) {
      // Asked for by name, an unreachable PostgreSQL is a failure; under "all" it is a note.
      if (options.stores.length === 1) throw new BenchFailure('postgres was asked for but is unreachable');
      continue;
    }
    console.log(`\n== ${opened.label}`);
    try {
      let target: Target;
      try {
        target = await startTarget(opened.store, options.clients);
      } catch (error) {
        await opened.store.close();
        throw error;
      }
      try {
        results.push({ kind, result: await fn(target, kind) });
      } finally {
        await target.close();
      }
    } finally {
      await opened.cleanup();
    }
  }
  return results;
}
