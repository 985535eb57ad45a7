/**
 * `npm run bench -- peers`: Baton against the PostgreSQL job queues a user would weigh it
 * against, one after the other on the same PostgreSQL server, each on a fresh database of its
 * own, in one run, so the ratios hold on a shared, noisy machine (issue 12).
 *
 * The peers are installed on first use into server/bench/peers/ (its package.json pins them;
 * node_modules there is git-ignored): a folder of their own, not a workspace and not a
 * dependency of Baton. Each peer drains the same number of no-op jobs inserted beforehand:
 *   - graphile-worker, defaults (concurrency 10), and batched (localQueue 100, completeJobBatchDelay 0);
 *   - pg-boss, batchSize 50 (one worker fetching 50 at a time, completing each batch at once);
 *   - idle wake of graphile-worker: add_job → handler start, one job at a time, the worker idle.
 * Baton runs the `tasks` benchmark's phases (server/bench/tasks.ts) over HTTP: the drain
 * (admit + complete, one task per request, 16 workers), the full cycle (submit → admit →
 * complete) at 16 workers without and with 4 claims, the idle wake (submit → admit reply), and
 * the PGlite drain. Every ratio is to graphile-worker's default drain.
 *
 * Sizes: BENCH_PEERS_JOBS (default 20,000; BENCH_TASKS_QUICK=1 makes it 4,000), BENCH_PEERS_WORKERS
 * (Baton's workers, default 16); the cycle window and wake samples as in `tasks`.
 * BENCH_PEERS_DRAIN_ONLY=1 runs only graphile-worker's default drain and Baton's drain on
 * PostgreSQL, the pair to watch while working on the hot path (a few minutes instead of twelve).
 * BENCH_PEERS_RUNTIME_ONLY=1 runs only graphile-worker batched beside Baton's runtime with
 * batching, each twice, alternating (the pair of issue 13's target).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createScratchDatabase } from '../src/store/sql/scratch-database';
import { BenchFailure, fmt, Latencies, type Benchmark, type BenchOptions } from './harness';
import { configOf, runStore } from './tasks';

const peersDir = fileURLToPath(new URL('./peers/', import.meta.url));
const peerPackages = ['graphile-worker', 'pg-boss'];

/** npm install in server/bench/peers/ unless both peers are there already. */
function ensurePeers(): NodeRequire {
  if (!peerPackages.every((name) => existsSync(join(peersDir, 'node_modules', name, 'package.json')))) {
    console.log(`installing ${peerPackages.join(' and ')} into ${peersDir} (once)`);
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error'], { cwd: peersDir, stdio: 'inherit' });
  }
  return createRequire(join(peersDir, 'package.json'));
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `count` until it answers 0: a drain ends when the peer's table holds no unfinished job. */
async function untilZero(count: () => Promise<number>, limitMs: number): Promise<void> {
  const until = performance.now() + limitMs;
  while ((await count()) > 0) {
    if (performance.now() > until) throw new BenchFailure('a peer did not finish its jobs in time');
    await sleep(2);
  }
}

interface Drained {
  jobs: number;
  seconds: number;
}

/** A fresh database on the server of DATABASE_URL for `work`, dropped afterwards. */
async function onScratch<T>(serverUrl: string, work: (url: string, pool: pg.Pool) => Promise<T>): Promise<T> {
  const scratch = await createScratchDatabase(serverUrl, 'baton_bench');
  const pool = new pg.Pool({ connectionString: scratch.url, max: 2 });
  pool.on('error', (error) => console.log(`  bench pool: ${error.message}`));
  try {
    return await work(scratch.url, pool);
  } finally {
    await pool.end();
    await scratch.drop();
  }
}

// ---------------------------------------------------------------------------------------------
// graphile-worker

interface GraphileModule {
  run(options: Record<string, unknown>): Promise<{ stop(): Promise<void> }>;
  makeWorkerUtils(options: Record<string, unknown>): Promise<{ migrate(): Promise<void>; release(): Promise<void> }>;
  Logger: new (factory: () => () => void) => unknown;
}

/**
 * graphile-worker on a pool of ours, ended before the database is dropped: a pool it made itself
 * could still hold idle connections then, and the drop's FORCE would cut them off mid-run.
 */
async function withGraphilePool<T>(url: string, work: (pgPool: pg.Pool) => Promise<T>): Promise<T> {
  const pgPool = new pg.Pool({ connectionString: url, max: 20 });
  const report = (error: Error): void => console.log(`  graphile-worker pool: ${error.message}`);
  pgPool.on('error', report);
  pgPool.on('connect', (client) => client.on('error', report));
  try {
    return await work(pgPool);
  } finally {
    await pgPool.end();
  }
}

async function graphileDrain(gw: GraphileModule, serverUrl: string, jobs: number, batched: boolean): Promise<Drained> {
  return onScratch(serverUrl, async (url, pool) => {
    const logger = new gw.Logger(() => () => {});
    const preset = batched ? { worker: { localQueue: { size: 100 }, completeJobBatchDelay: 0 } } : {};
    return withGraphilePool(url, async (pgPool) => {
      const utils = await gw.makeWorkerUtils({ pgPool, logger });
      await utils.migrate();
      await utils.release();
      await pool.query(`SELECT graphile_worker.add_job('noop', '{}'::json) FROM generate_series(1, $1)`, [jobs]);
      const started = performance.now();
      const runner = await gw.run({ pgPool, logger, noHandleSignals: true, preset, taskList: { noop: async () => {} } });
      // Handlers starting is not jobs done: the drain ends when the last completion has committed.
      await untilZero(async () => Number((await pool.query('SELECT count(*) AS n FROM graphile_worker.jobs')).rows[0].n), 600_000);
      const seconds = (performance.now() - started) / 1000;
      await runner.stop();
      return { jobs, seconds };
    });
  });
}

/** add_job → handler start with the worker idle, one job at a time. */
async function graphileWake(gw: GraphileModule, serverUrl: string, samples: number): Promise<number[]> {
  return onScratch(serverUrl, async (url, pool) => {
    const logger = new gw.Logger(() => () => {});
    let arrived: (() => void) | undefined;
    return withGraphilePool(url, async (pgPool) => {
      const utils = await gw.makeWorkerUtils({ pgPool, logger });
      await utils.migrate();
      await utils.release();
      const runner = await gw.run({ pgPool, logger, noHandleSignals: true, taskList: { wake: async () => arrived?.() } });
      await sleep(500); // the pool's LISTEN is up
      const latencies: number[] = [];
      for (let i = 0; i < samples; i++) {
        await sleep(25); // idle again: the last completion is in
        const started = performance.now();
        const ran = new Promise<void>((resolve) => (arrived = resolve));
        await pool.query(`SELECT graphile_worker.add_job('wake', '{}'::json)`);
        await ran;
        latencies.push(performance.now() - started);
      }
      await runner.stop();
      return latencies;
    });
  });
}

// ---------------------------------------------------------------------------------------------
// pg-boss

interface PgBossInstance {
  on(event: 'error', listener: (error: Error) => void): void;
  start(): Promise<unknown>;
  stop(options: Record<string, unknown>): Promise<void>;
  createQueue(name: string): Promise<void>;
  insert(jobs: Array<{ name: string; data: object }>): Promise<void>;
  work(name: string, options: Record<string, unknown>, handler: (jobs: unknown[]) => Promise<void>): Promise<string>;
}

async function pgBossDrain(PgBoss: new (options: Record<string, unknown>) => PgBossInstance, serverUrl: string, jobs: number): Promise<Drained> {
  return onScratch(serverUrl, async (url, pool) => {
    const boss = new PgBoss({ connectionString: url, max: 10, supervise: false, schedule: false });
    boss.on('error', (error) => console.log(`  pg-boss: ${error.message}`));
    await boss.start();
    await boss.createQueue('noop');
    for (let i = 0; i < jobs; i += 1_000) await boss.insert(Array.from({ length: Math.min(1_000, jobs - i) }, () => ({ name: 'noop', data: {} })));
    const started = performance.now();
    await boss.work('noop', { batchSize: 50, pollingIntervalSeconds: 0.5 }, async () => {});
    await untilZero(async () => Number((await pool.query(`SELECT count(*) AS n FROM pgboss.job WHERE name = 'noop' AND state <> 'completed'`)).rows[0].n), 600_000);
    const seconds = (performance.now() - started) / 1000;
    await boss.stop({ graceful: false, wait: true });
    return { jobs, seconds };
  });
}

// ---------------------------------------------------------------------------------------------
// The run

interface Row {
  system: string;
  perSecond: number;
  unit: string;
}

function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  const n = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1_000_000) throw new BenchFailure(`${name} must be a positive integer`);
  return n;
}

async function run(options: BenchOptions): Promise<void> {
  const quick = ['1', 'true', 'yes'].includes(process.env.BENCH_TASKS_QUICK ?? '');
  const jobs = envInt('BENCH_PEERS_JOBS', quick ? 4_000 : 20_000);
  const workers = envInt('BENCH_PEERS_WORKERS', 16);
  const serverUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
  const requirePeer = ensurePeers();
  const gw = requirePeer('graphile-worker') as GraphileModule;
  const PgBoss = requirePeer('pg-boss') as new (options: Record<string, unknown>) => PgBossInstance;
  const config = { ...configOf({ ...options, clients: workers }), workers: [workers], drainTasks: jobs };
  console.log(`peers: ${jobs} no-op jobs per drain; Baton with ${workers} workers; wake ${config.wakeSamples} samples; PostgreSQL at ${new URL(serverUrl).host}`);

  const rows: Row[] = [];
  if (['1', 'true', 'yes'].includes(process.env.BENCH_PEERS_RUNTIME_ONLY ?? '')) return runtimeOnly(gw, serverUrl, jobs, config);
  const gwDefault = await graphileDrain(gw, serverUrl, jobs, false);
  console.log(`  graphile-worker default: ${fmt(gwDefault.jobs / gwDefault.seconds)} jobs/s`);
  if (['1', 'true', 'yes'].includes(process.env.BENCH_PEERS_DRAIN_ONLY ?? '')) return drainOnly(gwDefault, config);
  const gwBatched = await graphileDrain(gw, serverUrl, jobs, true);
  console.log(`  graphile-worker batched: ${fmt(gwBatched.jobs / gwBatched.seconds)} jobs/s`);
  const boss = await pgBossDrain(PgBoss, serverUrl, jobs);
  console.log(`  pg-boss batchSize 50: ${fmt(boss.jobs / boss.seconds)} jobs/s`);
  const gwWake = new Latencies({ wake: await graphileWake(gw, serverUrl, config.wakeSamples) });

  const baton = await runStore('postgres', { ...config, phases: ['drain', 'runtime', 'cycles', 'claims', 'wake'] });
  const batonLite = await runStore('pglite', { ...config, phases: ['drain', 'runtime'] });
  if (!baton || !batonLite) throw new BenchFailure('postgres is unreachable');

  const base = gwDefault.jobs / gwDefault.seconds;
  const rate = (r: { done: number; seconds: number } | undefined): number => (r ? r.done / r.seconds : NaN);
  const cycles = (variant: string): number => {
    const row = baton.cycles.find((c) => c.variant === variant);
    return row ? row.result.measuredCycles / row.result.measuredSeconds : NaN;
  };
  rows.push({ system: 'graphile-worker 0.17.3, default (concurrency 10)', perSecond: base, unit: 'jobs/s' });
  rows.push({ system: 'graphile-worker 0.17.3, localQueue 100 + completeJobBatchDelay 0', perSecond: gwBatched.jobs / gwBatched.seconds, unit: 'jobs/s' });
  rows.push({ system: 'pg-boss 10.4.2, batchSize 50', perSecond: boss.jobs / boss.seconds, unit: 'jobs/s' });
  rows.push({ system: `Baton, one task per request (admit + complete over HTTP, ${workers} workers)`, perSecond: rate(baton.drain), unit: 'jobs/s' });
  rows.push({ system: `Baton, full cycle (submit → admit → complete, ${workers} workers)`, perSecond: cycles('no claims'), unit: 'cycles/s' });
  rows.push({ system: `Baton, full cycle with 4 claims per task (${workers} workers)`, perSecond: cycles('4 claims'), unit: 'cycles/s' });
  rows.push({ system: `Baton on PGlite, one task per request (${workers} workers)`, perSecond: rate(batonLite.drain), unit: 'jobs/s' });
  const runtimeShape = `${config.runtimeWorkers} workers × concurrency ${config.runtimeConcurrency}`;
  rows.push({ system: `Baton, @baton/runtime with batching (${runtimeShape})`, perSecond: rate(baton.runtimeDrain), unit: 'jobs/s' });
  rows.push({ system: `Baton on PGlite, @baton/runtime with batching (${runtimeShape})`, perSecond: rate(batonLite.runtimeDrain), unit: 'jobs/s' });

  const batchedBase = gwBatched.jobs / gwBatched.seconds;
  console.log('\n| system | rate | ratio to graphile-worker default | ratio to graphile-worker batched |\n| --- | ---: | ---: | ---: |');
  for (const r of rows) console.log(`| ${r.system} | ${fmt(r.perSecond)} ${r.unit} | ${fmt(r.perSecond / base, 2)}× | ${fmt(r.perSecond / batchedBase, 2)}× |`);
  const batonWake = new Latencies(baton.wake?.samples ?? {});
  console.log('\n| idle wake | p50 ms | p99 ms |\n| --- | ---: | ---: |');
  console.log(`| graphile-worker (add_job → handler start) | ${fmt(gwWake.percentile('wake', 50), 2)} | ${fmt(gwWake.percentile('wake', 99), 2)} |`);
  console.log(`| Baton (submit sent → admit reply) | ${fmt(batonWake.percentile('fromSend', 50), 2)} | ${fmt(batonWake.percentile('fromSend', 99), 2)} |`);
  console.log(`| Baton (submit reply → admit reply) | ${fmt(batonWake.percentile('fromReply', 50), 2)} | ${fmt(batonWake.percentile('fromReply', 99), 2)} |`);
  const problems = [...baton.problems, ...batonLite.problems];
  if (problems.length > 0) throw new BenchFailure(`problems in Baton's runs (listed above)`);
}

/** BENCH_PEERS_DRAIN_ONLY: graphile-worker's default drain beside Baton's, nothing else. */
async function drainOnly(gwDefault: Drained, config: ReturnType<typeof configOf>): Promise<void> {
  const baton = await runStore('postgres', { ...config, phases: ['drain'] });
  if (!baton?.drain) throw new BenchFailure('postgres is unreachable');
  const base = gwDefault.jobs / gwDefault.seconds;
  const drained = baton.drain.done / baton.drain.seconds;
  console.log(`\n| system | jobs/s | ratio to graphile-worker default |\n| --- | ---: | ---: |`);
  console.log(`| graphile-worker 0.17.3, default (concurrency 10) | ${fmt(base)} | 1.00× |`);
  console.log(`| Baton, one task per request (${config.workers[0]} workers) | ${fmt(drained)} | ${fmt(drained / base, 2)}× |`);
  if (baton.problems.length > 0) throw new BenchFailure(`problems in Baton's runs (listed above)`);
}

/**
 * BENCH_PEERS_RUNTIME_ONLY: graphile-worker batched beside Baton's runtime with batching, each
 * twice, alternating, so a drift of the machine shows as a spread instead of a false ratio.
 */
async function runtimeOnly(gw: GraphileModule, serverUrl: string, jobs: number, config: ReturnType<typeof configOf>): Promise<void> {
  const graphile: number[] = [];
  const runtime: number[] = [];
  for (let round = 0; round < 2; round++) {
    const batched = await graphileDrain(gw, serverUrl, jobs, true);
    graphile.push(batched.jobs / batched.seconds);
    const baton = await runStore('postgres', { ...config, phases: ['runtime'] });
    if (!baton?.runtimeDrain) throw new BenchFailure('postgres is unreachable');
    if (baton.problems.length > 0) throw new BenchFailure(`problems in Baton's runs (listed above)`);
    runtime.push(baton.runtimeDrain.done / baton.runtimeDrain.seconds);
  }
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
  console.log(`\n| system | jobs/s (two runs) | ratio to graphile-worker batched |\n| --- | ---: | ---: |`);
  console.log(`| graphile-worker 0.17.3, localQueue 100 + completeJobBatchDelay 0 | ${graphile.map((x) => fmt(x)).join(', ')} | 1.00× |`);
  console.log(`| Baton, @baton/runtime with batching (${config.runtimeWorkers} × ${config.runtimeConcurrency}) | ${runtime.map((x) => fmt(x)).join(', ')} | ${fmt(mean(runtime) / mean(graphile), 2)}× |`);
}

export const peersBenchmark: Benchmark = {
  description: 'Baton against graphile-worker and pg-boss on the same PostgreSQL, in one run: drains, full cycles, idle wake (installs the peers into server/bench/peers/)',
  run,
};
