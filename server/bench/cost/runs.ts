/**
 * One measured run per system and mode, each on a database of its own in the bench's cluster
 * (or a PGlite directory of its own), every part in its own process. A run enqueues its jobs,
 * then drains them; the CPU of each process is read before, between and after, and PostgreSQL's
 * counters are zeroed before and read once every connection of the run has closed (pg-stats.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { RuntimeDrainJob } from '../../../runtime/bench/drain-job';
import type { CyclesResult, JobMessage, JobSpec, Problems, RateResult } from '../tasks';
import { PgBouncer } from '../../src/testing/pgbouncer';
import { startBatonServer, createTenant, type BatonServer } from './baton-server';
import { cpuBetween, noCpu, readCpu, type CpuParts, type RunProcesses } from './cpu-parts';
import { startCommandChild, type CommandChild } from './ipc';
import { createDatabase, dropDatabase, probeTag, readCounters, resetCounters, type PgCounters } from './pg-stats';
import { walByRelation, walPosition, type WalPart } from './wal-by-relation';

export interface RunContext {
  clusterUrl: string;
  postmasterPid: number;
  topStatements: number;
  /** Jobs each run drains before it is measured, so every process is past start-up and its JIT warm. */
  warmupJobs: number;
}

export interface CostRow {
  system: string;
  jobs: number;
  /** Jobs put in the queue before the drain, per second; NaN for a closed-loop cycle. */
  enqueuePerSecond: number;
  /** The drain's jobs per second, or the closed loop's cycles per second. */
  perSecond: number;
  unit: 'jobs/s' | 'cycles/s';
  enqueueCpu: CpuParts;
  drainCpu: CpuParts;
  /** Wall time from the first CPU reading to the last. */
  wallSeconds: number;
  pg: PgCounters | undefined;
  /** What the enqueue and the drain wrote, by relation and WAL record type (PostgreSQL runs; not the cycles). */
  wal?: { enqueue: WalPart[]; drain: WalPart[] };
  problems: string[];
}

/** WAL positions around a run's phases: enqueue from `start` to `enqueued`, drain from `analyzed` to `drained`. */
interface WalMarks {
  start: string;
  enqueued: string;
  analyzed: string;
  drained: string;
}

async function walOfPhases(url: string, marks: WalMarks): Promise<NonNullable<CostRow['wal']>> {
  return { enqueue: await walByRelation(url, marks.start, marks.enqueued), drain: await walByRelation(url, marks.analyzed, marks.drained) };
}

const loadModule = new URL('./load-process.ts', import.meta.url).href;
const graphileModule = new URL('./graphile-process.ts', import.meta.url).href;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function problemLines(what: string, problems: Problems): string[] {
  if (problems.count === 0) return [];
  return [`${what}: ${problems.count} failed request(s) by status ${JSON.stringify(problems.byStatus)}`, ...problems.first.map((m) => `  ${m}`)];
}

/**
 * ANALYZE between enqueue and drain, for every system alike, outside the CPU readings: the
 * warm-up drain left statistics of near-empty queue tables (autovacuum analyzes them), and a
 * plan made on those for a queue of thousands made graphile-worker's claim ten times slower
 * (250 ms a batch). A long-running deployment's autovacuum keeps statistics near the queue's
 * real size; this stands in for it.
 */
async function analyze(client: pg.Client): Promise<void> {
  await client.query(`ANALYZE ${probeTag}`);
}

async function withDatabase(clusterUrl: string, database: string, work: (client: pg.Client) => Promise<void>): Promise<void> {
  const url = new URL(clusterUrl);
  url.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    await work(client);
  } finally {
    await client.end();
  }
}

/** Adds `jobs` jobs (one statement: add_job per row of generate_series), runs the worker until the table is empty, stops it. */
async function graphileDrain(
  worker: CommandChild,
  probe: pg.Client,
  jobs: number,
  onEnqueued: () => Promise<void> = async () => {},
  onAnalyzed: () => Promise<void> = async () => {},
): Promise<{ enqueueSeconds: number; drainSeconds: number }> {
  const t0 = performance.now();
  await probe.query(`SELECT graphile_worker.add_job('noop', '{}'::json) FROM generate_series(1, $1)`, [jobs]);
  const t1 = performance.now();
  await onEnqueued();
  await analyze(probe);
  await onAnalyzed();
  const t1b = performance.now();
  await worker.call('start');
  // Handlers starting is not jobs done: the drain ends when the last completion has committed (the row is deleted).
  while ((await probe.query(`SELECT EXISTS (SELECT 1 FROM graphile_worker._private_jobs) AS left ${probeTag}`)).rows[0].left) {
    if (performance.now() - t1b > 600_000) throw new Error(`graphile-worker: jobs left after 600 s`);
    await sleep(5);
  }
  const t2 = performance.now();
  return { enqueueSeconds: (t1 - t0) / 1000, drainSeconds: (t2 - t1b) / 1000 };
}

/** graphile-worker: a warm-up drain, then the measured one (jobs added by one statement, drained by its worker process). */
export async function graphileRun(ctx: RunContext, system: string, database: string, jobs: number, batched: boolean): Promise<CostRow> {
  const url = await createDatabase(ctx.clusterUrl, database);
  const worker = await startCommandChild(graphileModule, { DATABASE_URL: url, GRAPHILE_BATCHED: batched ? '1' : '0' });
  const probe = new pg.Client({ connectionString: url });
  let row: Omit<CostRow, 'pg'>;
  try {
    await probe.connect();
    await worker.call('migrate');
    await graphileDrain(worker, probe, ctx.warmupJobs);
    await worker.call('stop');
    await resetCounters(ctx.clusterUrl, database);
    const processes: RunProcesses = { postmaster: ctx.postmasterPid, clients: [worker.pid] };
    const marks: WalMarks = { start: await walPosition(url), enqueued: '', analyzed: '', drained: '' };
    const c0 = readCpu(processes);
    let c1 = c0;
    let analyzed = c0;
    const { enqueueSeconds, drainSeconds } = await graphileDrain(
      worker,
      probe,
      jobs,
      async () => {
        c1 = readCpu(processes);
        marks.enqueued = await walPosition(url);
      },
      async () => {
        marks.analyzed = await walPosition(url);
        analyzed = readCpu(processes);
      },
    );
    const c2 = readCpu(processes);
    marks.drained = await walPosition(url);
    await worker.call('stop');
    await worker.call('close');
    row = {
      system,
      jobs,
      enqueuePerSecond: jobs / enqueueSeconds,
      perSecond: jobs / drainSeconds,
      unit: 'jobs/s',
      enqueueCpu: cpuBetween(c0, c1),
      drainCpu: cpuBetween(analyzed, c2),
      wallSeconds: enqueueSeconds + drainSeconds,
      wal: await walOfPhases(url, marks),
      problems: [],
    };
  } finally {
    await probe.end();
    await worker.stop();
  }
  const counters = await readCounters(ctx.clusterUrl, database, ctx.topStatements);
  await dropDatabase(ctx.clusterUrl, database);
  return { ...row, pg: counters };
}

export type BatonDrain = { kind: 'http'; batch: number } | { kind: 'runtime'; workers: number; concurrency: number } | { kind: 'cycles'; warmupSeconds: number; seconds: number };

export interface BatonRunSpec {
  system: string;
  /** A database of this name in the cluster, or undefined for embedded PGlite. */
  database: string | undefined;
  jobs: number;
  /** Tasks per submit: 1 is POST /tasks, more is POST /tasks/submit-batch. */
  submitBatch: number;
  drain: BatonDrain;
  /** Concurrent HTTP clients of the submit, the HTTP drain and the cycles. */
  clients: number;
  /**
   * How the server reaches PostgreSQL (issue 33): `direct` (default); `direct-unprepared`, direct
   * with BATON_DATABASE_POOL_MODE=transaction (unnamed statements, nothing else changed);
   * `pgbouncer-session` and `pgbouncer-transaction`, through a PgBouncer of the run's own
   * (server/src/testing/pgbouncer.ts), whose CPU is the rows' pooler part. In transaction mode
   * the notifier's URL (BATON_NOTIFY_DATABASE_URL) is the direct one.
   */
  connection?: BatonConnection;
}

export type BatonConnection = 'direct' | 'direct-unprepared' | 'pgbouncer-session' | 'pgbouncer-transaction';

/** The server's database settings for `connection`, and the pooler it needs (started here, stopped by the caller). */
async function connectionSettings(connection: BatonConnection, directUrl: string): Promise<{ databaseUrl: string; settings: Record<string, string>; pooler: PgBouncer | undefined }> {
  if (connection === 'direct') return { databaseUrl: directUrl, settings: {}, pooler: undefined };
  const transaction = { BATON_DATABASE_POOL_MODE: 'transaction', BATON_NOTIFY_DATABASE_URL: directUrl };
  if (connection === 'direct-unprepared') return { databaseUrl: directUrl, settings: transaction, pooler: undefined };
  const pooler = await PgBouncer.start(directUrl);
  if (connection === 'pgbouncer-session') return { databaseUrl: pooler.url('session'), settings: {}, pooler };
  return { databaseUrl: pooler.url('transaction'), settings: transaction, pooler };
}

/** Baton's server and the load generator as separate processes, on PostgreSQL or PGlite. */
export async function batonRun(ctx: RunContext, spec: BatonRunSpec): Promise<CostRow> {
  const { database } = spec;
  const dataDir = database === undefined ? await mkdtemp(join(tmpdir(), 'baton-cost-')) : undefined;
  const directUrl = database === undefined ? undefined : await createDatabase(ctx.clusterUrl, database);
  const problems: string[] = [];
  let row: Omit<CostRow, 'pg'>;
  let pooler: PgBouncer | undefined;
  try {
    let server: BatonServer;
    if (directUrl === undefined) {
      server = await startBatonServer({ dataDir: dataDir! });
    } else {
      const connection = await connectionSettings(spec.connection ?? 'direct', directUrl);
      pooler = connection.pooler;
      server = await startBatonServer({ databaseUrl: connection.databaseUrl }, connection.settings);
    }
    try {
      const { endpoint, queue } = await createTenant(server, 100_000);
      const load = await startCommandChild(loadModule);
      const job = (jobSpec: JobSpec) => load.call<RateResult & CyclesResult>('job', { tasksBenchJob: true, endpoint, spec: jobSpec } satisfies JobMessage);
      try {
        const processes: RunProcesses = { server: server.pid, postmaster: database === undefined ? undefined : ctx.postmasterPid, pooler: pooler?.pid, clients: [load.pid] };
        // The warm-up drains as the measured run does (cycles: one request per call) on the same mailbox, with task keys of its own.
        const warm = { ...queue, runId: `${queue.runId}-warm-up` };
        const warmBatch = spec.drain.kind === 'cycles' ? 1 : spec.submitBatch;
        const warmed = await job({ kind: 'submit', queue: warm, tasks: ctx.warmupJobs, submitters: spec.clients, batch: warmBatch });
        const warmDrained = await job({ kind: 'drain', queue: warm, tasks: warmed.done, workers: spec.clients, batch: spec.drain.kind === 'http' ? spec.drain.batch : warmBatch });
        problems.push(...problemLines(`${spec.system} warm-up`, warmed.problems), ...problemLines(`${spec.system} warm-up drain`, warmDrained.problems));
        if (database !== undefined) await resetCounters(ctx.clusterUrl, database);
        const c0 = readCpu(processes);
        const t0 = performance.now();
        const wallSeconds = (): number => (performance.now() - t0) / 1000;
        if (spec.drain.kind === 'cycles') {
          const cycles = await job({ kind: 'cycles', queue, workers: spec.clients, warmupSeconds: spec.drain.warmupSeconds, seconds: spec.drain.seconds, resources: null });
          const c1 = readCpu(processes);
          problems.push(...problemLines(spec.system, cycles.problems));
          // CPU over every cycle the run completed (warm-up and tail too); the rate over the measured window only.
          row = { system: spec.system, jobs: cycles.completedCycles, enqueuePerSecond: NaN, perSecond: cycles.measuredCycles / cycles.measuredSeconds, unit: 'cycles/s', enqueueCpu: noCpu, drainCpu: cpuBetween(c0, c1), wallSeconds: wallSeconds(), problems };
        } else {
          const start = directUrl === undefined ? '' : await walPosition(directUrl);
          const submit = await job({ kind: 'submit', queue, tasks: spec.jobs, submitters: spec.clients, batch: spec.submitBatch });
          const c1 = readCpu(processes);
          const enqueued = directUrl === undefined ? '' : await walPosition(directUrl);
          problems.push(...problemLines(`${spec.system} submit`, submit.problems));
          if (database !== undefined) await withDatabase(ctx.clusterUrl, database, analyze);
          const marks = directUrl === undefined ? undefined : { start, enqueued, analyzed: await walPosition(directUrl), drained: '' };
          const analyzed = readCpu(processes);
          const drained =
            spec.drain.kind === 'http'
              ? await job({ kind: 'drain', queue, tasks: submit.done, workers: spec.clients, batch: spec.drain.batch })
              : await load.call<RateResult>('runtimeDrain', {
                  runtimeDrainJob: true,
                  endpoint,
                  mailboxId: queue.mailboxId,
                  scopeId: queue.scopeId,
                  tasks: submit.done,
                  workers: spec.drain.workers,
                  concurrency: spec.drain.concurrency,
                } satisfies RuntimeDrainJob);
          const c2 = readCpu(processes);
          if (marks !== undefined) marks.drained = await walPosition(directUrl!);
          problems.push(...problemLines(`${spec.system} drain`, drained.problems));
          if (drained.done !== spec.jobs) problems.push(`${spec.system}: ${spec.jobs} jobs, ${submit.done} submitted, ${drained.done} completed`);
          row = {
            system: spec.system,
            jobs: drained.done,
            enqueuePerSecond: submit.done / submit.seconds,
            perSecond: drained.done / drained.seconds,
            unit: 'jobs/s',
            enqueueCpu: cpuBetween(c0, c1),
            drainCpu: cpuBetween(analyzed, c2),
            wallSeconds: wallSeconds(),
            wal: marks === undefined ? undefined : await walOfPhases(directUrl!, marks),
            problems,
          };
        }
      } finally {
        await load.stop();
      }
    } finally {
      await server.stop();
      await pooler?.stop();
    }
    const counters = database === undefined ? undefined : await readCounters(ctx.clusterUrl, database, ctx.topStatements);
    return { ...row, pg: counters };
  } finally {
    // Stopped before the counters are read (its server connections close) or the database dropped.
    await pooler?.stop();
    if (database !== undefined) await dropDatabase(ctx.clusterUrl, database);
    if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
  }
}
