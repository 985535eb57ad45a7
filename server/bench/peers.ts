/**
 * `npm run bench -- peers`: what one job costs the machine in Baton and in graphile-worker, side
 * by side in one run on one PostgreSQL (issue 28). Every part runs in a process of its own so its
 * CPU can be read from /proc: the Baton server (server/src/main.ts, as `npm start` runs it), the
 * load generator (cost/load-process.ts) or graphile-worker's process (cost/graphile-process.ts),
 * and a PostgreSQL cluster of the bench's own (server/src/testing/postgres-cluster.ts) with
 * pg_stat_statements loaded. Each run gets a fresh database in that cluster.
 *
 * Modes (BENCH_PEERS_MODES picks some, comma-separated; all by default):
 *   gw-default      graphile-worker 0.17.3, its defaults (concurrency 10)
 *   gw-batched      graphile-worker, localQueue 100 and completeJobBatchDelay 0
 *   baton-single    Baton, one request per call: POST /tasks, then admit and complete one at a time (16 clients)
 *   baton-cycle     Baton, closed-loop cycles: each of 16 clients submits, admits, completes, again
 *   baton-batched   Baton, submit-batch, admit-batch and complete-batch of 100 (16 clients)
 *   baton-runtime   Baton, submit-batch of 100, then @baton-coordination/runtime workers with their default batching
 *   pglite-single, pglite-batched: the Baton modes above on embedded PGlite (the store is in the server's process)
 * and, only when named (issue 33), baton-single and baton-batched again, each with a suffix:
 *   -unprepared              direct, with BATON_DATABASE_POOL_MODE=transaction: unnamed statements alone
 *   -pgbouncer-session       through PgBouncer (pgbouncer on the PATH; a process of the run's own) in session mode
 *   -pgbouncer-transaction   through PgBouncer in transaction mode (unnamed statements; LISTEN direct)
 * For each: CPU per job by process (enqueue + drain), statements, rows written and WAL per job,
 * the top statements by total time; then the ratios to the issue's targets.
 *
 * Sizes: full by default (graphile-worker default 6,000 jobs; batched modes 20,000; Baton one at a
 * time 4,000, on PGlite 2,000; cycles --seconds, 10); BENCH_TASKS_QUICK=1 runs each with a fifth or so (a couple of
 * minutes). BENCH_PEERS_JOBS sets every mode's job count; --clients the Baton clients (16);
 * BENCH_PEERS_RUNTIME_WORKERS (4) and BENCH_PEERS_RUNTIME_CONCURRENCY (100) the runtime fleet;
 * BENCH_PEERS_TOP (8) the statements listed per run; BENCH_PEERS_WARMUP (500) the jobs each run drains
 * first, unmeasured, so every process is past its start-up and its JIT is warm.
 *
 * graphile-worker is installed on first use into server/bench/peers/ (its package.json pins it;
 * node_modules there is git-ignored): a folder of its own, not a workspace and not a dependency.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PostgresCluster } from '../src/testing/postgres-cluster';
import { freePort } from './cost/baton-server';
import { printCostTable, printRatios, printTopStatements, printWalByRelation } from './cost/cost-table';
import { cpuSum, cpuTotalMs } from './cost/cpu-parts';
import { postmasterPid, statStatementsSettings } from './cost/pg-stats';
import { batonRun, graphileRun, type CostRow, type RunContext } from './cost/runs';
import { BenchFailure, fmt, type Benchmark, type BenchOptions } from './harness';

const peersDir = fileURLToPath(new URL('./peers/', import.meta.url));

/** npm install in server/bench/peers/ unless graphile-worker is there already. */
function ensurePeers(): void {
  if (existsSync(join(peersDir, 'node_modules', 'graphile-worker', 'package.json'))) return;
  console.log(`installing the peers into ${peersDir} (once)`);
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error'], { cwd: peersDir, stdio: 'inherit' });
}

const defaultModes = ['gw-default', 'gw-batched', 'baton-single', 'baton-cycle', 'baton-batched', 'baton-runtime', 'pglite-single', 'pglite-batched'] as const;
/** Baton's PostgreSQL modes again, through a connection pooler or without prepared statements (issue 33): run when named. */
const poolerModes = [
  'baton-single-unprepared',
  'baton-single-pgbouncer-session',
  'baton-single-pgbouncer-transaction',
  'baton-batched-unprepared',
  'baton-batched-pgbouncer-session',
  'baton-batched-pgbouncer-transaction',
] as const;
const modes = [...defaultModes, ...poolerModes] as const;
type Mode = (typeof modes)[number];

function envInt(name: string, fallback: number, max = 1_000_000): number {
  const raw = process.env[name];
  const n = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new BenchFailure(`${name} must be an integer from 1 to ${max}`);
  return n;
}

function selectedModes(): Mode[] {
  const raw = process.env.BENCH_PEERS_MODES;
  if (!raw) return [...defaultModes];
  const picked = raw.split(',').map((m) => m.trim()).filter(Boolean);
  for (const m of picked) if (!modes.includes(m as Mode)) throw new BenchFailure(`BENCH_PEERS_MODES: unknown mode ${m} (${modes.join(', ')})`);
  return picked as Mode[];
}

async function run(options: BenchOptions): Promise<void> {
  const quick = ['1', 'true', 'yes'].includes(process.env.BENCH_TASKS_QUICK ?? '');
  const jobsOf = (full: number, small: number): number => envInt('BENCH_PEERS_JOBS', quick ? small : full, 100_000);
  const clients = options.clients;
  const cycleSeconds = quick ? 3 : options.seconds;
  const runtime = { workers: envInt('BENCH_PEERS_RUNTIME_WORKERS', 4, 64), concurrency: envInt('BENCH_PEERS_RUNTIME_CONCURRENCY', 100, 1_000) };
  const one = { submitBatch: 1, drain: { kind: 'http' as const, batch: 1 }, clients };
  const hundred = { submitBatch: 100, drain: { kind: 'http' as const, batch: 100 }, clients };
  const plans: Record<Mode, (ctx: RunContext) => Promise<CostRow>> = {
    'gw-default': (ctx) => graphileRun(ctx, 'graphile-worker 0.17.3, default (concurrency 10)', 'bench_gw_default', jobsOf(6_000, 2_000), false),
    'gw-batched': (ctx) => graphileRun(ctx, 'graphile-worker 0.17.3, localQueue 100 + completeJobBatchDelay 0', 'bench_gw_batched', jobsOf(20_000, 4_000), true),
    'baton-single': (ctx) => batonRun(ctx, { system: `Baton, one request per call (${clients} clients)`, database: 'bench_baton_single', jobs: jobsOf(4_000, 1_000), ...one }),
    'baton-cycle': (ctx) =>
      batonRun(ctx, { system: `Baton, full cycle submit → admit → complete (${clients} clients, ${cycleSeconds} s)`, database: 'bench_baton_cycle', jobs: 0, submitBatch: 1, clients, drain: { kind: 'cycles', warmupSeconds: 1, seconds: cycleSeconds } }),
    'baton-batched': (ctx) => batonRun(ctx, { system: `Baton, batches of 100 (${clients} clients)`, database: 'bench_baton_batched', jobs: jobsOf(20_000, 4_000), ...hundred }),
    'baton-runtime': (ctx) =>
      batonRun(ctx, {
        system: `Baton, @baton-coordination/runtime defaults (${runtime.workers} workers × concurrency ${runtime.concurrency}; submit-batch of 100)`,
        database: 'bench_baton_runtime',
        jobs: jobsOf(20_000, 4_000),
        submitBatch: 100,
        clients,
        drain: { kind: 'runtime', ...runtime },
      }),
    'baton-single-unprepared': (ctx) =>
      batonRun(ctx, { system: `Baton, one request per call, unprepared statements, direct (${clients} clients)`, database: 'bench_baton_single_unprepared', jobs: jobsOf(4_000, 1_000), ...one, connection: 'direct-unprepared' }),
    'baton-single-pgbouncer-session': (ctx) =>
      batonRun(ctx, { system: `Baton, one request per call, PgBouncer session mode (${clients} clients)`, database: 'bench_baton_single_pgb_session', jobs: jobsOf(4_000, 1_000), ...one, connection: 'pgbouncer-session' }),
    'baton-single-pgbouncer-transaction': (ctx) =>
      batonRun(ctx, { system: `Baton, one request per call, PgBouncer transaction mode (${clients} clients)`, database: 'bench_baton_single_pgb_tx', jobs: jobsOf(4_000, 1_000), ...one, connection: 'pgbouncer-transaction' }),
    'baton-batched-unprepared': (ctx) =>
      batonRun(ctx, { system: `Baton, batches of 100, unprepared statements, direct (${clients} clients)`, database: 'bench_baton_batched_unprepared', jobs: jobsOf(20_000, 4_000), ...hundred, connection: 'direct-unprepared' }),
    'baton-batched-pgbouncer-session': (ctx) =>
      batonRun(ctx, { system: `Baton, batches of 100, PgBouncer session mode (${clients} clients)`, database: 'bench_baton_batched_pgb_session', jobs: jobsOf(20_000, 4_000), ...hundred, connection: 'pgbouncer-session' }),
    'baton-batched-pgbouncer-transaction': (ctx) =>
      batonRun(ctx, { system: `Baton, batches of 100, PgBouncer transaction mode (${clients} clients)`, database: 'bench_baton_batched_pgb_tx', jobs: jobsOf(20_000, 4_000), ...hundred, connection: 'pgbouncer-transaction' }),
    'pglite-single': (ctx) => batonRun(ctx, { system: `Baton on PGlite, one request per call (${clients} clients)`, database: undefined, jobs: jobsOf(2_000, 1_000), ...one }),
    'pglite-batched': (ctx) => batonRun(ctx, { system: `Baton on PGlite, batches of 100 (${clients} clients)`, database: undefined, jobs: jobsOf(20_000, 4_000), ...hundred }),
  };

  ensurePeers();
  const selected = selectedModes();
  const cluster = await PostgresCluster.create(await freePort(), statStatementsSettings);
  const rows = new Map<Mode, CostRow>();
  try {
    const ctx: RunContext = { clusterUrl: cluster.url, postmasterPid: await postmasterPid(cluster.url), topStatements: envInt('BENCH_PEERS_TOP', 8, 50), warmupJobs: envInt('BENCH_PEERS_WARMUP', 500, 100_000) };
    console.log(`peers: ${selected.join(', ')}${quick ? ' (quick)' : ''}; the bench's own PostgreSQL cluster on port ${cluster.port} (postmaster ${ctx.postmasterPid}), pg_stat_statements loaded`);
    for (const mode of selected) {
      const row = await plans[mode](ctx);
      rows.set(mode, row);
      const cpu = cpuTotalMs(cpuSum(row.enqueueCpu, row.drainCpu)) / row.jobs;
      console.log(`  ${row.system}: ${row.jobs} jobs, ${fmt(row.perSecond)} ${row.unit}, ${fmt(cpu, 3)} ms CPU per job${row.problems.length > 0 ? `, ${row.problems.length} problem line(s)` : ''}`);
      for (const line of row.problems) console.log(`    ${line}`);
    }
  } finally {
    await cluster.destroy();
  }

  const all = [...rows.values()];
  console.log('\n### Cost per job (enqueue + drain; CPU from /proc per process)');
  printCostTable(all);
  console.log('\n### Ratios to graphile-worker (issue 28 targets)');
  printRatios([
    { what: 'batched: Baton batches of 100 / graphile-worker batched', baton: rows.get('baton-batched'), peer: rows.get('gw-batched'), cpuAtMost: 1.0, rateAtLeast: 1.0 },
    { what: 'batched: Baton @baton-coordination/runtime defaults / graphile-worker batched', baton: rows.get('baton-runtime'), peer: rows.get('gw-batched'), cpuAtMost: 1.0, rateAtLeast: 1.0 },
    { what: 'one per call: Baton drain / graphile-worker default', baton: rows.get('baton-single'), peer: rows.get('gw-default'), cpuAtMost: 2.0, rateAtLeast: 0.5 },
    { what: 'one per call: Baton full cycle / graphile-worker default', baton: rows.get('baton-cycle'), peer: rows.get('gw-default'), cpuAtMost: 2.0, rateAtLeast: 0.5 },
    { what: 'PGlite one per call / graphile-worker default', baton: rows.get('pglite-single'), peer: rows.get('gw-default') },
    { what: 'PGlite batches of 100 / graphile-worker batched', baton: rows.get('pglite-batched'), peer: rows.get('gw-batched') },
  ]);
  console.log('\n### Top statements by total time (pg_stat_statements)');
  printTopStatements(all);
  console.log('\n### What a job wrote: WAL by relation (pg_walinspect)');
  printWalByRelation(all, envInt('BENCH_PEERS_WAL_TOP', 24, 500));
  const problems = all.flatMap((r) => r.problems);
  if (problems.length > 0) throw new BenchFailure(`problems in the runs (listed above)`);
}

export const peersBenchmark: Benchmark = {
  description: 'cost per job of Baton and graphile-worker in one run: CPU per process, statements, rows and WAL per job, top statements, ratios to the targets',
  run,
};
