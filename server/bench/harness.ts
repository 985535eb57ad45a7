/**
 * Shared machinery for `npm run bench -- <name>`: flags, one fresh store per run, a real Baton
 * server on a loopback port, a tenant made through the admin API, closed-loop load in a worker
 * thread and latency figures. A benchmark (budgets.ts, ...) sets up its resources, names the
 * exported load function its clients run, and checks the end state.
 *
 * This module is also the load worker's entry point (see the bottom): the worker imports the
 * benchmark module by URL and runs its load function there.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { SystemClock, type Store } from '@baton/core';
import pg from 'pg';
import { Pool } from 'undici';
import { createBaton } from '../src/host/baton';
import { openStore } from '../src/store/open-store';
import { createScratchDatabase } from '../src/store/sql/scratch-database';

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
  for (let i = 0; i < args.length; i += 2) {
    const [flag, value] = [args[i], args[i + 1]];
    if (value === undefined) throw new BenchFailure(`${flag} needs a value`);
    if (flag === '--seconds') options.seconds = bounded(flag, value, 1, 600);
    else if (flag === '--warmup') options.warmupSeconds = bounded(flag, value, 0, 60);
    else if (flag === '--clients') options.clients = bounded(flag, value, 1, 256);
    else if (flag === '--store') {
      if (value === 'all') options.stores = ['pglite', 'postgres'];
      else if (value === 'pglite' || value === 'postgres') options.stores = [value];
      else throw new BenchFailure(`--store must be pglite, postgres or all, not ${value}`);
    } else throw new BenchFailure(`unknown flag ${flag} (flags: --seconds N, --warmup N, --clients N, --store pglite|postgres|all)`);
  }
  return options;
}

/** Caps keep a mistyped flag from turning a benchmark into an hour-long load test. */
function bounded(flag: string, value: string, min: number, max: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new BenchFailure(`${flag} must be an integer from ${min} to ${max}`);
  return n;
}

// ---------------------------------------------------------------------------------------------
// Stores: each run gets a store nobody else uses; cleanup closes it and removes its data.

export interface OpenedStore {
  store: Store;
  label: string;
  cleanup(): Promise<void>;
}

/** A fresh PGlite data directory on disk (as `npm start` uses it), deleted after the run. */
async function openPglite(): Promise<OpenedStore> {
  const dataDir = await mkdtemp(join(tmpdir(), 'baton-bench-'));
  const removeDir = () => rm(dataDir, { recursive: true, force: true });
  try {
    const store = await openStore({ kind: 'pglite', dataDir });
    return { store, label: `pglite (${dataDir})`, cleanup: () => store.close().finally(removeDir) };
  } catch (error) {
    await removeDir();
    throw error;
  }
}

const defaultPostgresUrl = 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * A fresh, uniquely named database on the PostgreSQL server of DATABASE_URL (or the local
 * default), dropped after the run. The server URL is only used to CREATE and DROP that one
 * database: existing databases are never written. Undefined when the server is unreachable.
 */
async function openPostgres(): Promise<OpenedStore | undefined> {
  const serverUrl = process.env.DATABASE_URL || defaultPostgresUrl;
  const admin = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 3_000 });
  try {
    await admin.connect();
  } catch (error) {
    console.log(`\npostgres: skipped, ${redact(serverUrl)} is unreachable (${(error as Error).message})`);
    await admin.end().catch(() => {});
    return undefined;
  }
  await admin.end();
  const scratch = await createScratchDatabase(serverUrl, 'baton_bench');
  try {
    const store = await openStore({ kind: 'postgres', url: scratch.url });
    return { store, label: `postgres (${redact(scratch.url)})`, cleanup: () => store.close().finally(() => scratch.drop()) };
  } catch (error) {
    await scratch.drop().catch(() => {});
    throw error;
  }
}

function redact(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

// ---------------------------------------------------------------------------------------------
// HTTP: undici's Pool (keep-alive, one connection per client, no pipelining). It is the
// lightest Node client, which matters when client and server share two cores.

/** A call under /v1/spaces/{spaceId}; throws unless the status is `expected`; returns the parsed body. */
export type Call = (method: 'GET' | 'POST', path: string, expected: number, body?: unknown, headers?: Record<string, string>) => Promise<any>;

function caller(http: Pool, prefix: string, baseHeaders: Record<string, string>): Call {
  return async (method, path, expected, body, headers = {}) => {
    const res = await http.request({
      method,
      path: prefix + path,
      headers: { ...baseHeaders, ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.body.text(); // always read: an unread body would stall the connection
    if (res.statusCode !== expected) throw new BenchFailure(`${method} ${path}: expected ${expected}, got ${res.statusCode} ${text.slice(0, 300)}`);
    return text ? JSON.parse(text) : undefined;
  };
}

/** Bounded: no request may hang a run; 10 s is far above any latency seen here. */
const newPool = (baseUrl: string, connections: number) => new Pool(baseUrl, { connections, pipelining: 1, headersTimeout: 10_000, bodyTimeout: 10_000 });

// ---------------------------------------------------------------------------------------------
// A real server over HTTP on loopback, and a tenant created the way an operator would.

/** What a load worker needs to reach the server as the tenant. */
export interface Endpoint {
  baseUrl: string;
  spaceId: string;
  key: string;
}

export interface Target extends Endpoint {
  /** For setup and end-of-run checks from the main thread (not used under load). */
  call: Call;
}

async function startTarget(store: Store): Promise<{ target: Target; close(): Promise<void> }> {
  const adminToken = randomBytes(24).toString('hex');
  const baton = await createBaton({ store, clock: new SystemClock(), adminToken, bootstrap: false });
  // The background sweep runs as under `npm start`, so its cost is part of the figures.
  baton.background.start();
  baton.limitsSync.start();
  const baseUrl = await baton.app.listen({ host: '127.0.0.1', port: 0 });
  const http = newPool(baseUrl, 2);
  const close = async () => {
    await http.close();
    await baton.drainAndClose(); // the store stays open: its opener closes it
  };
  try {
    const admin = caller(http, '/admin/v1', { authorization: `Bearer ${adminToken}` });
    // ENTERPRISE with no caps: a benchmark measures the store and the server, not plan limits.
    const noCaps = { operationsPerMonth: null, agentsAtOnce: null, requestsPerMinute: null, activeRuns: null, activeTasks: null };
    const org = await admin('POST', '/orgs', 201, { name: 'bench', plan: 'ENTERPRISE', limits: noCaps });
    const space = await admin('POST', `/orgs/${org.id}/spaces`, 201, { name: 'bench' });
    const { secret: key } = await admin('POST', `/orgs/${org.id}/keys`, 201, { name: 'bench' });
    const call = caller(http, `/v1/spaces/${space.id}`, { authorization: `Bearer ${key}` });
    return { target: { baseUrl, spaceId: space.id, key, call }, close };
  } catch (error) {
    await close();
    throw error;
  }
}

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
      const server = await startTarget(opened.store);
      try {
        results.push({ kind, result: await fn(server.target, kind) });
      } finally {
        await server.close();
      }
    } finally {
      await opened.cleanup();
    }
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// Closed-loop load: N clients, each running one iteration after another.

/** Times one request; only requests wholly inside the measured phase are recorded. */
export type Timed = <T>(label: string, request: () => Promise<T>) => Promise<T>;
export type Iteration = (client: number, n: number, timed: Timed) => Promise<void>;
/** What a benchmark module exports for its clients; runs in the worker, so `setup` is plain data. */
export type LoadFunction<S> = (call: Call, setup: S, clients: number) => Iteration;

/** Latency samples per request type; percentiles by nearest rank over all measured samples. */
export class Latencies {
  constructor(private readonly samples: Record<string, number[]> = {}) {}

  add(label: string, ms: number): void {
    (this.samples[label] ??= []).push(ms);
  }

  count(label: string): number {
    return this.samples[label]?.length ?? 0;
  }

  percentile(label: string, p: number): number {
    const list = [...(this.samples[label] ?? [])].sort((a, b) => a - b);
    if (list.length === 0) return NaN;
    return list[Math.min(list.length - 1, Math.ceil((p / 100) * list.length) - 1)]!;
  }

  toJSON(): Record<string, number[]> {
    return this.samples;
  }
}

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

interface LoadJob {
  benchLoad: true;
  moduleUrl: string;
  exportName: string;
  setup: unknown;
  endpoint: Endpoint;
  clients: number;
  warmupSeconds: number;
  seconds: number;
}

const running = new Set<Worker>();
let interrupted = false;
/** Ctrl-C ends the load early so clean-up (temporary directory, database) still runs. */
export function stopOnInterrupt(): void {
  process.once('SIGINT', () => {
    console.log('\ninterrupted: stopping load and cleaning up');
    interrupted = true;
    for (const worker of running) void worker.terminate();
  });
}

/**
 * Runs the load in a worker thread so that client work (HTTP, JSON) never queues on the
 * server's event loop: client and server share the machine's cores, not one thread.
 * `moduleUrl` (the benchmark's import.meta.url) must export `exportName` as a LoadFunction.
 */
export async function runLoad<S>(
  options: Pick<BenchOptions, 'clients' | 'seconds' | 'warmupSeconds'>,
  target: Endpoint,
  load: { moduleUrl: string; exportName: string; setup: S },
): Promise<LoadResult> {
  const job: LoadJob = {
    benchLoad: true,
    ...load,
    endpoint: { baseUrl: target.baseUrl, spaceId: target.spaceId, key: target.key },
    clients: options.clients,
    warmupSeconds: options.warmupSeconds,
    seconds: options.seconds,
  };
  // tsx's loader is not inherited by workers on Node 20: the worker registers it, then loads us.
  const boot = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => { tsx.register(); return import(${JSON.stringify(import.meta.url)}); })`;
  const worker = new Worker(boot, { eval: true, workerData: job });
  running.add(worker);
  // Bounded in time whatever happens inside: warm-up + measured phase + a generous tail.
  const watchdog = setTimeout(() => void worker.terminate(), (options.warmupSeconds + options.seconds + 60) * 1000);
  try {
    const raw = await new Promise<Omit<LoadResult, 'latencies'> & { samples: Record<string, number[]> }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new BenchFailure(interrupted ? 'interrupted' : `load worker exited (code ${code}) without a result`)));
    });
    return { ...raw, latencies: new Latencies(raw.samples) };
  } finally {
    clearTimeout(watchdog);
    running.delete(worker);
    await worker.terminate();
  }
}

/** At most this many failures before the load stops: a broken server should fail fast, not spin. */
const maxErrors = 100;

/**
 * The worker side. Throughput counts only iterations wholly inside the measured window, so
 * ramp-up and the tail are left out; iterations in flight at the end finish before it returns.
 */
async function workLoad(job: LoadJob): Promise<Omit<LoadResult, 'latencies'> & { samples: Record<string, number[]> }> {
  const module = (await import(job.moduleUrl)) as Record<string, LoadFunction<unknown>>;
  const makeIteration = module[job.exportName];
  if (typeof makeIteration !== 'function') throw new Error(`${job.moduleUrl} exports no load function ${job.exportName}`);
  const http = newPool(job.endpoint.baseUrl, job.clients);
  const call = caller(http, `/v1/spaces/${job.endpoint.spaceId}`, { authorization: `Bearer ${job.endpoint.key}` });
  const iteration = makeIteration(call, job.setup, job.clients);

  const latencies = new Latencies();
  const measureFrom = performance.now() + job.warmupSeconds * 1000;
  const measureTo = measureFrom + job.seconds * 1000;
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
    for (let n = 0; errors < maxErrors && performance.now() < measureTo; n++) {
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
  await Promise.all(Array.from({ length: job.clients }, (_, i) => loop(i)));
  await http.close();
  const measuredSeconds = (Math.min(performance.now(), measureTo) - measureFrom) / 1000;
  return { measuredSeconds, measuredIterations, completedIterations, errors, firstErrors, samples: latencies.toJSON() };
}

if (!isMainThread && (workerData as LoadJob | undefined)?.benchLoad) {
  workLoad(workerData as LoadJob).then(
    (result) => parentPort!.postMessage(result),
    (error: unknown) => {
      throw error; // surfaces as the Worker's 'error' event in the main thread
    },
  );
}

export const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : '-');
