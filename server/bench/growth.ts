/**
 * `npm run bench -- growth`: what each hot request costs as the tables fill (issue 28, item 2).
 *
 * Each level gets a fresh database in the bench's own PostgreSQL cluster (pg_stat_statements and
 * auto_explain loaded), a Baton server over it, and a fill made through the API once and cloned
 * by set-based SQL (growth/fill.ts):
 *
 * - `empty`: nothing but the measured queue;
 * - `mailbox-10k`, `mailbox-90k`, `mailbox-100k`: that many READY tasks in the measured mailbox,
 *   in another scope, so the measured admits never take them (100k is 99,000: a mailbox's
 *   backlogLimit is at most 100,000 READY plus CLAIMED, and the measured submits need room);
 * - `space-1M`: 995,000 READY tasks across 20 other mailboxes of the space (the space's
 *   maxBacklog is at most 1,000,000, and the measured submits need room);
 * - `finished-1M`: 1,000,000 SUCCEEDED tasks with their ACKED deliveries, events and idempotency
 *   records in the measured mailbox and scope, recent enough that retention keeps them.
 *
 * Then, one request at a time over HTTP: N submits, N admits, N completes, B submit-batches,
 * admit-batches and complete-batches of 50, N journal reads of three kinds, and N whole cycles.
 * Per level and request: mean, p50 and p99 latency, and shared buffers (hit + read), statements
 * and rows per request from pg_stat_statements deltas around each phase; ratios to `empty`. At
 * the levels marked for it, an explain pass runs a few more of each request with auto_explain
 * logging every statement's EXPLAIN (ANALYZE, BUFFERS), read back from the cluster's log.
 *
 * Environment:
 *   BENCH_GROWTH_QUICK=1          levels empty, 10k, 90k, 100k; N 100, B 6, 100 cycles; plans at 100k
 *   BENCH_GROWTH_LEVELS=a,b       a subset of the levels, by name
 *   BENCH_GROWTH_N, _BATCHES, _CYCLES   request counts (full: 300, 20, 300)
 *   BENCH_GROWTH_EXPLAIN=a,b      levels with an explain pass (full: space-1M, finished-1M; `none`: no plans)
 *   BENCH_GROWTH_SCALE=1          multiplies every fill (e.g. 0.01 to try the levels in seconds)
 *   BENCH_GROWTH_PORT=54329       the cluster's port
 *   BENCH_GROWTH_REPORT=path      the markdown report (default: a file in the temp directory)
 */
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { encodePosition } from '../src/store/sql/repositories/events';
import { createScratchDatabase } from '../src/store/sql/scratch-database';
import type { PostgresCluster } from '../src/testing/postgres-cluster';
import { startServer, type Client } from './growth/api';
import { ClusterMonitor, logOffset, parsePlans, readLogFrom, startCluster, type LoggedPlan } from './growth/cluster';
import { fill, settle, type FillResult } from './growth/fill';
import { Requests, runPhases, warmUp, type PhaseResult, type RequestKind, type Sizes } from './growth/phases';
import type { Config, Level, LevelResult } from './growth/model';
import { renderReport, printSummary } from './growth/report';
import { BenchFailure, type Benchmark, type BenchOptions } from './harness';



const allLevels: Level[] = [
  { name: 'empty', kind: 'empty', tasks: 0, description: 'nothing but the measured queue' },
  { name: 'mailbox-10k', kind: 'mailbox', tasks: 10_000, description: '10,000 READY tasks in the measured mailbox, another scope' },
  { name: 'mailbox-90k', kind: 'mailbox', tasks: 90_000, description: '90,000 READY tasks in the measured mailbox, another scope' },
  { name: 'mailbox-100k', kind: 'mailbox', tasks: 99_000, description: '99,000 READY tasks in the measured mailbox, another scope (its backlogLimit is 100,000)' },
  { name: 'space-1M', kind: 'space', tasks: 995_000, description: "995,000 READY tasks across 20 other mailboxes of the space (the space's maxBacklog is 1,000,000)" },
  { name: 'finished-1M', kind: 'finished', tasks: 1_000_000, description: '1,000,000 SUCCEEDED tasks, ACKED deliveries, their events and idempotency records, in the measured mailbox and scope' },
];


function envInt(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new BenchFailure(`${name} must be an integer from ${min} to ${max}`);
  return n;
}

function names(raw: string | undefined, fallback: string[]): string[] {
  if (raw === 'none') return [];
  const list = raw === undefined || raw === '' ? fallback : raw.split(',').map((s) => s.trim()).filter(Boolean);
  for (const name of list) if (!allLevels.some((l) => l.name === name)) throw new BenchFailure(`unknown level ${name} (${allLevels.map((l) => l.name).join(', ')})`);
  return list;
}

export function configOf(): Config {
  const quick = ['1', 'true', 'yes'].includes(process.env.BENCH_GROWTH_QUICK ?? '');
  const levelNames = names(process.env.BENCH_GROWTH_LEVELS, quick ? ['empty', 'mailbox-10k', 'mailbox-90k', 'mailbox-100k'] : allLevels.map((l) => l.name));
  if (!levelNames.includes('empty')) levelNames.unshift('empty'); // every ratio is to it
  const scale = Number(process.env.BENCH_GROWTH_SCALE || '1');
  if (!(scale > 0 && scale <= 1)) throw new BenchFailure('BENCH_GROWTH_SCALE must be above 0 and at most 1');
  const scaled = (l: Level): Level => (scale === 1 || l.tasks === 0 ? l : { ...l, tasks: Math.max(2, Math.round(l.tasks * scale)), description: `${l.description}, scaled by ${scale} to ${Math.max(2, Math.round(l.tasks * scale))}` });
  return {
    quick,
    levels: allLevels.filter((l) => levelNames.includes(l.name)).map(scaled),
    explainLevels: names(process.env.BENCH_GROWTH_EXPLAIN, quick ? ['mailbox-100k'] : ['space-1M', 'finished-1M']),
    sizes: {
      singles: envInt('BENCH_GROWTH_N', quick ? 100 : 300, 10, 900),
      batches: envInt('BENCH_GROWTH_BATCHES', quick ? 6 : 20, 2, 18),
      batchSize: 50,
      cycles: envInt('BENCH_GROWTH_CYCLES', quick ? 100 : 300, 10, 2_000),
    },
    port: envInt('BENCH_GROWTH_PORT', 54329, 1024, 65535),
    reportPath: process.env.BENCH_GROWTH_REPORT || join(tmpdir(), `baton-growth-${new Date().toISOString().replace(/[:.]/g, '-')}.md`),
  };
}


const say = (line: string) => console.log(`  ${line}`);

/** The journal's tail as a cursor: the reads measured after it return the phases' own events. */
async function tailCursor(dbUrl: string, spaceId: string): Promise<string> {
  const db = new pg.Client({ connectionString: dbUrl });
  await db.connect();
  try {
    const { rows } = await db.query('SELECT tx::text AS tx, event_id FROM events WHERE space_id = $1 ORDER BY tx DESC, event_id DESC LIMIT 1', [spaceId]);
    return rows.length === 0 ? '0' : encodePosition(BigInt(rows[0].tx), BigInt(rows[0].event_id));
  } finally {
    await db.end();
  }
}

async function createMailbox(api: Client, name: string): Promise<string> {
  return (await api.post('/mailboxes', [201], { name, backlogLimit: 100_000 }, `growth-mailbox-${name}`)).body.id;
}

/** Reads the service answers about the fill, checked against what was filled. */
async function validate(api: Client, level: Level, filled: { mailboxIds: string[]; fillScope: string }, result: FillResult): Promise<string[]> {
  const lines: string[] = [];
  const backlog = (await api.get('/diagnostics/backlog?limit=100')).body.items as any[];
  const ready = level.kind === 'finished' ? 0 : level.tasks;
  const perMailbox = filled.mailboxIds.map((id, i) => Math.floor(ready / filled.mailboxIds.length) + (i < ready % filled.mailboxIds.length ? 1 : 0));
  for (const [i, id] of filled.mailboxIds.entries()) {
    const row = backlog.find((b) => b.mailboxId === id);
    if (!row) throw new BenchFailure(`validation: mailbox ${id} missing from /diagnostics/backlog`);
    // Clone g lands in mailbox g % k and the template in the first: the counts differ from an even split by the template's place only.
    const expectedLow = perMailbox[i]! - 1;
    const expectedHigh = perMailbox[i]! + 1;
    // A capped count only says "at least"; an exact one must match the fill.
    const consistent = row.capped ? row.ready + row.claimed > 0 : row.ready >= expectedLow && row.ready <= expectedHigh && row.claimed === 0;
    if (!consistent) throw new BenchFailure(`validation: mailbox ${id} has ready ${row.ready} claimed ${row.claimed} capped ${row.capped}, filled ~${perMailbox[i]}`);
    if (i < 3) lines.push(`GET /diagnostics/backlog: mailbox ${i + 1} of ${filled.mailboxIds.length}: ready ${row.ready}${row.capped ? ' (capped count)' : ''}, claimed ${row.claimed}, dead ${row.dead}, oldest ready ${row.oldestReadyAt ?? '-'} (filled ${perMailbox[i]})`);
  }
  const sample = (await api.get(`/tasks/${result.sampleTaskId}`)).body;
  const wantState = level.kind === 'finished' ? 'SUCCEEDED' : 'PENDING';
  if (sample.state !== wantState) throw new BenchFailure(`validation: cloned task ${result.sampleTaskId} is ${sample.state}, expected ${wantState}`);
  lines.push(`GET /tasks/{a clone}: state ${sample.state}, mailbox ${filled.mailboxIds.includes(sample.mailboxId) ? 'as filled' : 'WRONG'}`);
  if (level.kind === 'finished') {
    const page = (await api.get(`/tasks?scopeId=${filled.fillScope}&state=SUCCEEDED&limit=5`)).body;
    if (page.items.length !== 5) throw new BenchFailure(`validation: /tasks lists ${page.items.length} SUCCEEDED tasks of the filled scope`);
    lines.push(`GET /tasks?state=SUCCEEDED: a full page of ${page.items.length}`);
  } else {
    // A cloned delivery is admissible and completes like one the API made.
    const admitted = (await api.post('/tasks/admit', [200], { scopeId: filled.fillScope, mailboxId: filled.mailboxIds[0], holder: 'growth-validator', holderSession: randomUUID(), leaseSeconds: 60, waitMs: 0 }, `growth-validate-${randomUUID()}`)).body;
    const done = (await api.post(`/messages/${admitted.messageId}/complete`, [200], { token: admitted.token })).body;
    if (done.state !== 'ACKED') throw new BenchFailure(`validation: completing a filled task gave ${JSON.stringify(done)}`);
    const task = (await api.get(`/tasks/${admitted.taskId}`)).body;
    if (task.state !== 'SUCCEEDED') throw new BenchFailure(`validation: a filled task completed but is ${task.state}`);
    lines.push(`POST /tasks/admit + complete in the filled scope: took filled task ${admitted.taskId.slice(0, 8)}…, now ${task.state}`);
  }
  return lines;
}

/** A few of each request with auto_explain on; per kind, the last plan of each distinct statement. */
async function explainPass(cluster: PostgresCluster, monitor: ClusterMonitor, r: Requests, sizes: Sizes, cursor: string): Promise<Partial<Record<RequestKind, LoggedPlan[]>>> {
  const plans: Partial<Record<RequestKind, LoggedPlan[]>> = {};
  await monitor.explainEverything(true);
  try {
    const capture = async (kind: RequestKind, run: () => Promise<void>) => {
      const from = await logOffset(cluster.logPath);
      await run();
      await new Promise((resolve) => setTimeout(resolve, 100));
      const byText = new Map<string, LoggedPlan>();
      for (const plan of parsePlans(await readLogFrom(cluster.logPath, from))) byText.set(plan.query, plan);
      plans[kind] = [...byText.values()];
    };
    const admitted: any[] = [];
    await capture('submit', async () => {
      for (let i = 0; i < 3; i++) await r.submit();
    });
    await capture('admit', async () => {
      for (let i = 0; i < 3; i++) admitted.push(await r.admit());
    });
    await capture('complete', async () => {
      for (const d of admitted) await r.complete(d);
    });
    let batch: any[] = [];
    await capture('submit-batch', async () => void (await r.submitBatch(sizes.batchSize)));
    await capture('admit-batch', async () => void (batch = await r.admitBatch(sizes.batchSize)));
    await capture('complete-batch', () => r.completeBatch(batch));
    await capture('events', () => r.events(cursor));
    await capture('events-start', () => r.events(undefined));
    await capture('watch', () => r.watch(cursor));
  } finally {
    await monitor.explainEverything(false);
  }
  return plans;
}

async function runLevel(cluster: PostgresCluster, monitor: ClusterMonitor, level: Level, config: Config): Promise<LevelResult> {
  console.log(`\n== ${level.name}: ${level.description}`);
  const scratch = await createScratchDatabase(cluster.url, 'baton_bench');
  const dbName = new URL(scratch.url).pathname.slice(1);
  try {
    const server = await startServer(scratch.url);
    try {
      const api = server.tenant.client;
      await api.request('PUT', '/limits', [200], { maxBacklog: 1_000_000 });
      const measured = { mailboxId: await createMailbox(api, 'measured'), scopeId: randomUUID() };
      const result: LevelResult = { level, settleSeconds: 0, validations: [], phases: [] };
      if (level.kind !== 'empty') {
        const mailboxIds = level.kind === 'space' ? await Promise.all(Array.from({ length: 20 }, (_, i) => createMailbox(api, `other-${i + 1}`))) : [measured.mailboxId];
        const fillScope = level.kind === 'finished' ? measured.scopeId : randomUUID();
        const spec = { mailboxIds, scopeId: fillScope, finished: level.kind === 'finished', total: level.tasks, label: level.name.replace(/\W/g, '_') };
        result.fill = await fill(scratch.url, api, spec, (line) => say(`fill: ${line}`));
        say(`filled ${level.tasks} tasks in ${result.fill.seconds.toFixed(1)} s`);
        result.validations = await validate(api, level, { mailboxIds, fillScope }, result.fill);
        for (const line of result.validations) say(`check: ${line}`);
      }
      // Every level, the empty one too: the same fresh statistics and no checkpoint debt.
      result.settleSeconds = await settle(scratch.url);
      say(`VACUUM ANALYZE + CHECKPOINT ${result.settleSeconds.toFixed(1)} s`);
      const dbid = await monitor.databaseOid(dbName);
      const cursor = await tailCursor(scratch.url, server.tenant.spaceId);
      const requests = new Requests(api, measured, `${level.name}-m`);
      await warmUp(requests, config.sizes, cursor);
      result.phases = await runPhases(requests, config.sizes, cursor, monitor, dbid);
      result.loadAverage = loadavg()[0]!;
      for (const p of result.phases) {
        const mean = p.samplesMs.reduce((a, b) => a + b, 0) / p.samplesMs.length;
        const buffers = p.statements.reduce((a, s) => a + s.hit + s.read, 0) / p.samplesMs.length;
        say(`${p.kind.padEnd(14)} ${String(p.samplesMs.length).padStart(4)} × mean ${mean.toFixed(2)} ms, ${buffers.toFixed(0)} buffers per request`);
      }
      if (config.explainLevels.includes(level.name)) {
        result.plans = await explainPass(cluster, monitor, new Requests(api, measured, `${level.name}-x`), config.sizes, cursor);
        say(`explain pass: ${Object.values(result.plans).reduce((a, p) => a + (p?.length ?? 0), 0)} plans captured`);
      }
      return result;
    } finally {
      await server.close();
    }
  } finally {
    await scratch.drop();
  }
}

async function run(_options: BenchOptions): Promise<void> {
  const config = configOf();
  console.log(
    `growth: levels ${config.levels.map((l) => l.name).join(', ')}; ${config.sizes.singles} of each single request, ${config.sizes.batches} batches of ${config.sizes.batchSize}, ${config.sizes.cycles} cycles; plans at ${config.explainLevels.join(', ') || 'none'}${config.quick ? ' (quick)' : ''}`,
  );
  const cluster = await startCluster(config.port);
  const results: LevelResult[] = [];
  try {
    const monitor = await ClusterMonitor.connect(cluster);
    try {
      console.log(`cluster: ${await monitor.version()} on port ${cluster.port}, log ${cluster.logPath}`);
      for (const level of config.levels) results.push(await runLevel(cluster, monitor, level, config));
    } finally {
      await monitor.close();
    }
  } finally {
    await cluster.destroy();
  }
  printSummary(results);
  await writeFile(config.reportPath, renderReport(results, config));
  console.log(`\nreport (tables, statements, plans): ${config.reportPath}`);
}

export const growthBenchmark: Benchmark = {
  description: 'cost of each hot request (latency, PostgreSQL buffers, plans) at 0, 10k, 100k READY in the mailbox, 1M across the space, 1M finished (PostgreSQL)',
  run,
};
