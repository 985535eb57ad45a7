/**
 * `npm run bench -- tasks`: full task cycles over HTTP, on PGlite and on PostgreSQL.
 *
 * A cycle is what a worker does for one task: `POST /tasks` (submit), `POST /tasks/admit`
 * (claim the oldest admissible delivery with its resources) and `POST /messages/{id}/complete`.
 * Four parts, each on its own mailbox and scope (BENCH_TASKS_PHASES picks them):
 *
 * - `cycles`: closed-loop cycles with 1, 8 and 32 workers; each worker submits a task, admits
 *   (whichever task is oldest, not necessarily its own) and completes; cycles/s and per-request
 *   latencies inside the measured window.
 * - `claims`: the same with four resource claims per task: one pool unit, one quota unit, one
 *   budget reservation and a work-limit slot (capacities far above what the run can use).
 * - `wake`: idle workers long-poll admit (waitMs 10000); one task is submitted at a time once
 *   all of them are parked; wake latency is from the submit's reply (and from its send) to the
 *   admit's reply.
 * - `drain`: N tasks submitted first (concurrently; submit rate reported on its own), then
 *   workers admit (waitMs 0) and complete until every task is done: jobs/s of the drain, as
 *   graphile-worker's own benchmark reports it.
 * - `runtime`: the same drain run by @baton-coordination/runtime workers (createWorker, batching on), as a
 *   user's fleet runs it: jobs/s from start to the last complete answered.
 *
 * Sizes come from the environment (main.ts parses only the common flags):
 *   BENCH_TASKS_QUICK=1             3 s measured, 1 s warm-up, 50 wake samples, 2,000 drain tasks
 *   BENCH_TASKS_PHASES=cycles,claims,wake,drain
 *   BENCH_TASKS_WORKERS=1,8,32      worker counts of `cycles` and `claims`
 *   BENCH_TASKS_WAKE_SAMPLES=300    BENCH_TASKS_WAKE_IDLE=4 (idle long-polling workers)
 *   BENCH_TASKS_DRAIN=20000         BENCH_TASKS_DRAIN_SUBMITTERS=16
 *   BENCH_TASKS_DRAIN_BATCH=1       deliveries per admit-batch and complete-batch in the drain (1: the single routes)
 *   BENCH_TASKS_SUBMIT_BATCH=1      tasks per submit-batch when a drain fills its queue (1: POST /tasks)
 *   BENCH_TASKS_RUNTIME_WORKERS=4, BENCH_TASKS_RUNTIME_CONCURRENCY=100: the `runtime` phase's @baton-coordination/runtime workers
 *   BENCH_TASKS_RUNTIME_MAX_ITEMS, _DELAY_MS, _MAX_IN_FLIGHT: their batching knobs (the runtime's defaults unless set)
 *   drain workers: --clients N (default 16)
 *   --seconds / --warmup: the measured window of `cycles` and `claims` (quick: 3 and 1)
 *
 * The space's maxBacklog (default 1,000 READY plus CLAIMED messages) is raised with PUT /limits so
 * the drain's queue fits. PostgreSQL runs with the PgNotifier (LISTEN/NOTIFY wake-ups and their publisher pool), as
 * `npm start` does with DATABASE_URL; PGlite with the in-process notifier, as `npm start` does.
 * Clients run in a worker thread (as in harness.ts); every non-2xx reply is recorded with its
 * body, printed, and fails the run after the figures are printed.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { LocalNotifier, SystemClock, type Notifier, type Store } from '@baton/core';
import pg from 'pg';
import { Pool } from 'undici';
import { createBaton } from '../src/host/baton';
import { PgNotifier } from '../src/notify/pg-notifier';
import { openStore } from '../src/store/open-store';
import { createScratchDatabase } from '../src/store/sql/scratch-database';
import { BenchFailure, fmt, Latencies, type Benchmark, type BenchOptions, type StoreKind } from './harness';

// ---------------------------------------------------------------------------------------------
// Configuration

export type Phase = 'cycles' | 'claims' | 'wake' | 'drain' | 'runtime';
const allPhases: Phase[] = ['cycles', 'claims', 'wake', 'drain', 'runtime'];

export interface Config {
  quick: boolean;
  phases: Phase[];
  workers: number[];
  seconds: number;
  warmupSeconds: number;
  wakeSamples: number;
  wakeIdle: number;
  drainTasks: number;
  drainSubmitters: number;
  drainWorkers: number;
  /** Deliveries per admit-batch and complete-batch in the drain; 1 drains with the single routes. */
  drainBatch: number;
  /** Tasks per POST /tasks/submit-batch when the drains fill their queue; 1 submits one at a time. */
  submitBatch: number;
  /** The `runtime` phase: this many @baton-coordination/runtime workers, each with this many handlers. */
  runtimeWorkers: number;
  runtimeConcurrency: number;
  /** The runtime workers' batching knobs: the runtime's defaults unless set. */
  runtimeBatching: { maxItems?: number; delayMs?: number; maxInFlight?: number };
}

function envInt(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new BenchFailure(`${name} must be an integer from ${min} to ${max}`);
  return n;
}

export function configOf(options: BenchOptions): Config {
  const quick = ['1', 'true', 'yes'].includes(process.env.BENCH_TASKS_QUICK ?? '');
  const phases = (process.env.BENCH_TASKS_PHASES ?? allPhases.join(','))
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  for (const p of phases) if (!allPhases.includes(p as Phase)) throw new BenchFailure(`BENCH_TASKS_PHASES: unknown phase ${p} (${allPhases.join(', ')})`);
  const workers = (process.env.BENCH_TASKS_WORKERS ?? '1,8,32').split(',').map((w) => Number(w.trim()));
  for (const w of workers) if (!Number.isInteger(w) || w < 1 || w > 256) throw new BenchFailure('BENCH_TASKS_WORKERS: integers from 1 to 256, comma-separated');
  return {
    quick,
    phases: phases as Phase[],
    workers,
    seconds: quick ? 3 : options.seconds,
    warmupSeconds: quick ? 1 : options.warmupSeconds,
    wakeSamples: envInt('BENCH_TASKS_WAKE_SAMPLES', quick ? 50 : 300, 1, 100_000),
    wakeIdle: envInt('BENCH_TASKS_WAKE_IDLE', 4, 1, 4_000),
    drainTasks: envInt('BENCH_TASKS_DRAIN', quick ? 2_000 : 20_000, 1, 100_000),
    drainSubmitters: envInt('BENCH_TASKS_DRAIN_SUBMITTERS', 16, 1, 256),
    drainWorkers: options.clients,
    drainBatch: envInt('BENCH_TASKS_DRAIN_BATCH', 1, 1, 100),
    submitBatch: envInt('BENCH_TASKS_SUBMIT_BATCH', 1, 1, 100),
    runtimeWorkers: envInt('BENCH_TASKS_RUNTIME_WORKERS', 4, 1, 64),
    runtimeConcurrency: envInt('BENCH_TASKS_RUNTIME_CONCURRENCY', 100, 1, 1_000),
    runtimeBatching: {
      ...(process.env.BENCH_TASKS_RUNTIME_MAX_ITEMS ? { maxItems: envInt('BENCH_TASKS_RUNTIME_MAX_ITEMS', 100, 1, 100) } : {}),
      ...(process.env.BENCH_TASKS_RUNTIME_DELAY_MS ? { delayMs: envInt('BENCH_TASKS_RUNTIME_DELAY_MS', 0, 0, 1_000) } : {}),
      ...(process.env.BENCH_TASKS_RUNTIME_MAX_IN_FLIGHT ? { maxInFlight: envInt('BENCH_TASKS_RUNTIME_MAX_IN_FLIGHT', 2, 1, 16) } : {}),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP client (both threads): undici Pool, keep-alive, no pipelining. Every reply whose status is
// not an expected one becomes a Problem carrying the status and the body.

export interface Endpoint {
  baseUrl: string;
  spaceId: string;
  key: string;
}

interface Reply {
  status: number;
  body: any;
}

class Problem extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
  ) {
    super(message);
  }
}

/** Long polls hold up to 10 s here (30 s at most): timeouts well above that, but bounded. */
const newPool = (baseUrl: string, connections: number) => new Pool(baseUrl, { connections, pipelining: 1, headersTimeout: 45_000, bodyTimeout: 45_000 });

class Client {
  private readonly pool: Pool;
  private readonly prefix: string;
  private readonly auth: string;

  constructor(endpoint: Endpoint, connections: number, prefix = `/v1/spaces/${endpoint.spaceId}`, auth = `Bearer ${endpoint.key}`) {
    this.pool = newPool(endpoint.baseUrl, connections);
    this.prefix = prefix;
    this.auth = auth;
  }

  async request(method: 'GET' | 'POST' | 'PUT', path: string, expected: number[], body?: unknown, idempotencyKey?: string): Promise<Reply> {
    const headers: Record<string, string> = { authorization: this.auth };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
    let res;
    try {
      res = await this.pool.request({ method, path: this.prefix + path, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    } catch (error) {
      throw new Problem(`${method} ${path}: ${(error as Error).message}`, undefined);
    }
    const text = await res.body.text(); // always read: an unread body would stall the connection
    if (!expected.includes(res.statusCode)) throw new Problem(`${method} ${path.replace(/[0-9a-f-]{36}/g, '{id}')}: expected ${expected.join('/')}, got ${res.statusCode} ${text.slice(0, 400)}`, res.statusCode);
    return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
  }

  post(path: string, expected: number[], body: unknown, idempotencyKey?: string): Promise<Reply> {
    return this.request('POST', path, expected, body, idempotencyKey);
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/** Failures seen by a job: counted by status, the first few kept whole. */
export interface Problems {
  count: number;
  byStatus: Record<string, number>;
  first: string[];
}

const newProblems = (): Problems => ({ count: 0, byStatus: {}, first: [] });

function record(problems: Problems, error: unknown): void {
  problems.count++;
  const status = error instanceof Problem ? String(error.status ?? 'network') : 'other';
  problems.byStatus[status] = (problems.byStatus[status] ?? 0) + 1;
  if (problems.first.length < 8) problems.first.push(error instanceof Error ? error.message : String(error));
}

/** At most this many failures before a job stops: a broken server should fail fast, not spin. */
const maxProblems = 100;

// ---------------------------------------------------------------------------------------------
// Jobs: what the worker thread runs. Plain data in, plain data out.

interface Resources {
  requirements: { pools: Array<{ name: string; units: number }>; quotas: Array<{ name: string; units: number }>; budgets: Array<{ name: string; reserveMinor: string }> };
  workLimit: string;
}

export interface Queue {
  runId: string;
  mailboxId: string;
  scopeId: string;
}

export type JobSpec =
  | { kind: 'cycles'; queue: Queue; workers: number; warmupSeconds: number; seconds: number; resources: Resources | null }
  | { kind: 'wake'; queue: Queue; idle: number; samples: number; waitMs: number; quietMs: number }
  | { kind: 'submit'; queue: Queue; tasks: number; submitters: number; batch: number }
  | { kind: 'drain'; queue: Queue; tasks: number; workers: number; batch: number }
  | { kind: 'runtimeDrain'; queue: Queue; tasks: number; workers: number; concurrency: number; batching: { maxItems?: number; delayMs?: number; maxInFlight?: number } };

export interface CyclesResult {
  measuredSeconds: number;
  measuredCycles: number;
  completedCycles: number;
  emptyAdmits: number;
  samples: Record<string, number[]>;
  problems: Problems;
}

export interface WakeResult {
  samples: Record<string, number[]>;
  emptyAdmits: number;
  problems: Problems;
  /** The server's heap per parked poll, measured once all had parked (main thread). */
  heapPerParkedPollKiB?: number;
}

export interface RateResult {
  seconds: number;
  done: number;
  emptyAdmits: number;
  samples: Record<string, number[]>;
  problems: Problems;
}

type JobResult = CyclesResult | WakeResult | RateResult;

export interface JobMessage {
  tasksBenchJob: true;
  endpoint: Endpoint;
  spec: JobSpec;
}

const admitBody = (queue: Queue, worker: number, session: string, waitMs: number) => ({
  scopeId: queue.scopeId,
  mailboxId: queue.mailboxId,
  holder: `bench-worker-${worker}`,
  holderSession: session,
  leaseSeconds: 120,
  waitMs,
});

function checkAdmitted(body: any, resources: Resources | null): void {
  const ok =
    typeof body?.messageId === 'string' &&
    typeof body?.taskId === 'string' &&
    typeof body?.token === 'string' &&
    (resources === null ||
      (body.claimed?.pools?.length === 1 && body.claimed?.quotas?.length === 1 && body.claimed?.budgets?.length === 1 && body.claimed?.workLimit === resources.workLimit));
  if (!ok) throw new Problem(`admit: unexpected reply ${JSON.stringify(body).slice(0, 400)}`, 200);
}

async function complete(client: Client, admitted: any): Promise<void> {
  const done = await client.post(`/messages/${admitted.messageId}/complete`, [200], { token: admitted.token });
  if (done.body?.state !== 'ACKED') throw new Problem(`complete: unexpected reply ${JSON.stringify(done.body).slice(0, 400)}`, 200);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Closed loop: each worker submits, admits (the oldest READY task) and completes, again and again. */
async function cyclesJob(client: Client, spec: Extract<JobSpec, { kind: 'cycles' }>): Promise<CyclesResult> {
  const { queue, resources } = spec;
  const latencies = new Latencies();
  const problems = newProblems();
  const measureFrom = performance.now() + spec.warmupSeconds * 1000;
  const measureTo = measureFrom + spec.seconds * 1000;
  const inWindow = (t0: number, t1: number) => t0 >= measureFrom && t1 <= measureTo;
  let measuredCycles = 0;
  let completedCycles = 0;
  let emptyAdmits = 0;
  const timed = async <T>(label: string, request: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    const result = await request();
    const t1 = performance.now();
    if (inWindow(t0, t1)) latencies.add(label, t1 - t0);
    return result;
  };
  const loop = async (worker: number): Promise<void> => {
    const session = randomUUID();
    for (let n = 0; problems.count < maxProblems && performance.now() < measureTo; n++) {
      const t0 = performance.now();
      try {
        const taskKey = `${queue.runId}-${worker}-${n}`;
        const task = { scopeId: queue.scopeId, mailboxId: queue.mailboxId, taskKey, input: { worker, n }, ...(resources ?? {}) };
        const submitted = await timed('submit', () => client.post('/tasks', [201], task, taskKey));
        if (submitted.body?.created !== true) throw new Problem(`submit: unexpected reply ${JSON.stringify(submitted.body).slice(0, 300)}`, 201);
        // Every worker has submitted before it admits, so a READY task is always there for it;
        // a 204 can only come from a wake-up that never came (counted, then tried again).
        let admitted: any;
        for (let attempt = 0; admitted === undefined; attempt++) {
          if (attempt >= 6) throw new Problem(`admit: 204 six times in a row (${taskKey})`, 204);
          const reply = await timed('admit', () => client.post('/tasks/admit', [200, 204], admitBody(queue, worker, session, 5_000), `${taskKey}-admit-${attempt}`));
          if (reply.status === 204) emptyAdmits++;
          else admitted = reply.body;
        }
        checkAdmitted(admitted, resources);
        await timed('complete', () => complete(client, admitted));
        completedCycles++;
        if (inWindow(t0, performance.now())) measuredCycles++;
      } catch (error) {
        record(problems, error);
      }
    }
  };
  await Promise.all(Array.from({ length: spec.workers }, (_, i) => loop(i)));
  const measuredSeconds = (Math.min(performance.now(), measureTo) - measureFrom) / 1000;
  return { measuredSeconds, measuredCycles, completedCycles, emptyAdmits, samples: latencies.toJSON(), problems };
}

/**
 * Idle workers long-poll admit; one task at a time is submitted once every one of them has had
 * its admit out for `settleMs` (parked, not mid-transaction). Wake latency: from the submit's
 * reply (and from its send) to the admit's reply carrying that task.
 */
async function wakeJob(client: Client, spec: Extract<JobSpec, { kind: 'wake' }>): Promise<WakeResult> {
  const { queue } = spec;
  const settleMs = 25;
  const latencies = new Latencies();
  const problems = newProblems();
  let emptyAdmits = 0;
  const outSince: Array<number | undefined> = Array.from({ length: spec.idle }, () => undefined);
  const arrived = new Map<string, number>();
  const awaited = new Map<string, (t: number) => void>();
  const arrival = (taskId: string): Promise<number> => {
    const t = arrived.get(taskId);
    if (t !== undefined) return Promise.resolve(t);
    return new Promise((resolve) => awaited.set(taskId, resolve));
  };

  // An admitter leaves only after taking a stop task (input {stop: true}): one per admitter.
  const admitter = async (worker: number): Promise<void> => {
    const session = randomUUID();
    for (let n = 0; problems.count < maxProblems; n++) {
      try {
        outSince[worker] = performance.now();
        const reply = await client.post('/tasks/admit', [200, 204], admitBody(queue, worker, session, spec.waitMs), `${queue.runId}-admit-${worker}-${n}`);
        const t = performance.now();
        outSince[worker] = undefined;
        if (reply.status === 204) {
          emptyAdmits++;
          continue;
        }
        checkAdmitted(reply.body, null);
        arrived.set(reply.body.taskId, t);
        awaited.get(reply.body.taskId)?.(t);
        await complete(client, reply.body);
        if (reply.body.payload?.input?.stop === true) return;
      } catch (error) {
        outSince[worker] = undefined;
        record(problems, error);
        await sleep(100);
      }
    }
  };
  const submit = async (taskKey: string, stop = false): Promise<{ t0: number; t1: number; taskId: string }> => {
    const t0 = performance.now();
    const reply = await client.post('/tasks', [201], { scopeId: queue.scopeId, mailboxId: queue.mailboxId, taskKey, input: { stop } }, taskKey);
    return { t0, t1: performance.now(), taskId: reply.body.taskId };
  };

  const admitters = Array.from({ length: spec.idle }, (_, i) => admitter(i));
  for (let s = 0; s < spec.samples && problems.count < maxProblems; s++) {
    try {
      // Parked: every admitter has had its admit out for settleMs (bounded wait).
      for (let tries = 0; ; tries++) {
        const now = performance.now();
        if (outSince.every((t) => t !== undefined && now - t >= settleMs)) break;
        if (tries > 20_000) throw new Problem('wake: admitters never all parked within 20 s', undefined);
        await sleep(1);
      }
      if (s === 0) await sleep(spec.quietMs);
      const { t0, t1, taskId } = await submit(`${queue.runId}-wake-${s}`);
      const t2 = await Promise.race([arrival(taskId), sleep(15_000).then(() => NaN)]);
      if (Number.isNaN(t2)) throw new Problem(`wake: task ${taskId} not admitted within 15 s`, undefined);
      latencies.add('fromReply', t2 - t1);
      latencies.add('fromSend', t2 - t0);
      latencies.add('submit', t1 - t0);
    } catch (error) {
      record(problems, error);
    }
  }
  // Each admitter takes one stop task, completes it and leaves.
  await Promise.all(Array.from({ length: spec.idle }, (_, i) => submit(`${queue.runId}-wake-stop-${i}`, true).catch((error) => record(problems, error))));
  await Promise.all(admitters);
  return { samples: latencies.toJSON(), emptyAdmits, problems };
}

/** `tasks` submits from `submitters` concurrent clients; the rate is over the whole phase. */
async function submitJob(client: Client, spec: Extract<JobSpec, { kind: 'submit' }>): Promise<RateResult> {
  const { queue } = spec;
  const latencies = new Latencies();
  const problems = newProblems();
  let next = 0;
  let done = 0;
  const t0 = performance.now();
  const task = (i: number) => ({ scopeId: queue.scopeId, mailboxId: queue.mailboxId, taskKey: `${queue.runId}-drain-${i}`, input: { i } });
  const loop = async (): Promise<void> => {
    while (problems.count < maxProblems) {
      const first = next;
      const end = Math.min(spec.tasks, first + spec.batch);
      next = end;
      if (first >= spec.tasks) return;
      const s = performance.now();
      try {
        if (spec.batch === 1) {
          await client.post('/tasks', [201], task(first), task(first).taskKey);
        } else {
          const tasks = Array.from({ length: end - first }, (_, k) => task(first + k));
          const reply = await client.post('/tasks/submit-batch', [200], { tasks }, `${tasks[0]!.taskKey}-batch`);
          const created = (reply.body.items as { status: number }[]).filter((item) => item.status === 201).length;
          if (created !== tasks.length) throw new Problem(`submit-batch: ${tasks.length - created} of ${tasks.length} not created: ${JSON.stringify(reply.body).slice(0, 300)}`, 200);
        }
        latencies.add('submit', performance.now() - s);
        done += end - first;
      } catch (error) {
        record(problems, error);
      }
    }
  };
  await Promise.all(Array.from({ length: spec.submitters }, () => loop()));
  return { seconds: (performance.now() - t0) / 1000, done, emptyAdmits: 0, samples: latencies.toJSON(), problems };
}

/**
 * Workers admit (waitMs 0) and complete until all `tasks` are claimed; a 204 before then is
 * retried. With `spec.batch` above 1 each admits up to that many with admit-batch and completes
 * what it got with one complete-batch; with 1, the single routes.
 */
async function drainJob(client: Client, spec: Extract<JobSpec, { kind: 'drain' }>): Promise<RateResult> {
  const { queue } = spec;
  const latencies = new Latencies();
  const problems = newProblems();
  let claimed = 0;
  let done = 0;
  let emptyAdmits = 0;
  /** The deliveries of one admit (none for a 204). */
  const admit = async (worker: number, session: string, n: number): Promise<any[]> => {
    const key = `${queue.runId}-drain-admit-${worker}-${n}`;
    if (spec.batch === 1) {
      const reply = await client.post('/tasks/admit', [200, 204], admitBody(queue, worker, session, 0), key);
      return reply.status === 204 ? [] : [reply.body];
    }
    const reply = await client.post('/tasks/admit-batch', [200, 204], { ...admitBody(queue, worker, session, 0), maxTasks: spec.batch }, key);
    return reply.status === 204 ? [] : (reply.body.items as any[]);
  };
  const completeAll = async (admitted: any[]): Promise<void> => {
    if (spec.batch === 1) return complete(client, admitted[0]);
    const completed = await client.post('/messages/complete-batch', [200], { items: admitted.map((d) => ({ messageId: d.messageId, token: d.token })) });
    const acked = (completed.body.items as any[]).filter((i) => i.status === 200 && i.body?.state === 'ACKED').length;
    if (acked !== admitted.length) throw new Problem(`complete-batch: ${admitted.length - acked} of ${admitted.length} items not ACKED: ${JSON.stringify(completed.body).slice(0, 400)}`, 200);
  };
  const t0 = performance.now();
  const loop = async (worker: number): Promise<void> => {
    const session = randomUUID();
    for (let n = 0; claimed < spec.tasks && problems.count < maxProblems; n++) {
      try {
        const a = performance.now();
        const admitted = await admit(worker, session, n);
        latencies.add(admitted.length > 0 ? 'admit' : 'admit204', performance.now() - a);
        if (admitted.length === 0) {
          emptyAdmits++;
          await sleep(1);
          continue;
        }
        claimed += admitted.length;
        for (const delivery of admitted) checkAdmitted(delivery, null);
        const c = performance.now();
        await completeAll(admitted);
        latencies.add('complete', performance.now() - c);
        done += admitted.length;
      } catch (error) {
        record(problems, error);
      }
    }
  };
  await Promise.all(Array.from({ length: spec.workers }, (_, i) => loop(i)));
  return { seconds: (performance.now() - t0) / 1000, done, emptyAdmits, samples: latencies.toJSON(), problems };
}

export async function runJobHere(message: JobMessage): Promise<JobResult> {
  const { spec } = message;
  if (spec.kind === 'runtimeDrain') throw new Error('the runtime drain runs in runtime/bench/drain-job.ts');
  const connections = spec.kind === 'cycles' ? spec.workers : spec.kind === 'wake' ? spec.idle + 2 : spec.kind === 'submit' ? spec.submitters : spec.workers;
  const client = new Client(message.endpoint, connections);
  try {
    if (spec.kind === 'cycles') return await cyclesJob(client, spec);
    if (spec.kind === 'wake') return await wakeJob(client, spec);
    if (spec.kind === 'submit') return await submitJob(client, spec);
    return await drainJob(client, spec);
  } finally {
    await client.close();
  }
}

if (!isMainThread && (workerData as JobMessage | undefined)?.tasksBenchJob) {
  runJobHere(workerData as JobMessage).then(
    (result) => parentPort!.postMessage(result),
    (error: unknown) => {
      throw error; // surfaces as the Worker's 'error' event in the main thread
    },
  );
}

// ---------------------------------------------------------------------------------------------
// Main thread: stores, server, tenant, resources; jobs in a worker thread.

const running = new Set<Worker>();
let interrupted = false;

/**
 * The runtime drain's job lives with the runtime (runtime/bench/drain-job.ts) and is loaded by
 * path: the server's benchmark drives @baton-coordination/runtime as a user's process would, without linking it.
 */
const runtimeDrainModule = new URL('../../runtime/bench/drain-job.ts', import.meta.url).href;

/** Runs a job in a worker thread (client work never queues on the server's event loop), bounded by `limitSeconds`. */
async function runJob<R extends JobResult>(endpoint: Endpoint, spec: JobSpec, limitSeconds: number): Promise<R> {
  const runtimeDrain = spec.kind === 'runtimeDrain';
  const message = runtimeDrain
    ? { runtimeDrainJob: true, endpoint, mailboxId: spec.queue.mailboxId, scopeId: spec.queue.scopeId, tasks: spec.tasks, workers: spec.workers, concurrency: spec.concurrency, batching: spec.batching }
    : ({ tasksBenchJob: true, endpoint, spec } satisfies JobMessage);
  const module = runtimeDrain ? runtimeDrainModule : import.meta.url;
  // tsx's loader is not inherited by workers on Node 20: the worker registers it, then loads the job's module.
  const boot = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => { tsx.register(); return import(${JSON.stringify(module)}); })`;
  const worker = new Worker(boot, { eval: true, workerData: message });
  running.add(worker);
  let timedOut = false;
  const watchdog = setTimeout(() => {
    timedOut = true;
    void worker.terminate();
  }, limitSeconds * 1000);
  try {
    return await new Promise<R>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.once('exit', (code) =>
        reject(new BenchFailure(interrupted ? 'interrupted' : timedOut ? `${spec.kind} job ran past its ${limitSeconds} s limit` : `${spec.kind} job exited (code ${code}) without a result`)),
      );
    });
  } finally {
    clearTimeout(watchdog);
    running.delete(worker);
    await worker.terminate();
  }
}

interface Opened {
  store: Store;
  label: string;
  notifier: PgNotifier | undefined;
  cleanup(): Promise<void>;
}

async function openPglite(): Promise<Opened> {
  const dataDir = await mkdtemp(join(tmpdir(), 'baton-bench-'));
  const removeDir = () => rm(dataDir, { recursive: true, force: true });
  try {
    const store = await openStore({ kind: 'pglite', dataDir });
    return { store, label: `pglite (${dataDir})`, notifier: undefined, cleanup: () => store.close().finally(removeDir) };
  } catch (error) {
    await removeDir();
    throw error;
  }
}

async function openPostgres(): Promise<Opened | undefined> {
  const serverUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
  const probe = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 3_000 });
  try {
    await probe.connect();
  } catch (error) {
    console.log(`\npostgres: skipped, server unreachable (${(error as Error).message})`);
    await probe.end().catch(() => {});
    return undefined;
  }
  await probe.end();
  const scratch = await createScratchDatabase(serverUrl, 'baton_bench');
  try {
    const store = await openStore({ kind: 'postgres', url: scratch.url });
    // As main.ts does with DATABASE_URL: long polls wake through LISTEN/NOTIFY too.
    const notifier = await PgNotifier.start({ url: scratch.url, clock: new SystemClock() });
    const label = `postgres (${new URL(scratch.url).pathname.slice(1)}, PgNotifier)`;
    return { store, label, notifier, cleanup: () => notifier.close().then(() => store.close()).finally(() => scratch.drop()) };
  } catch (error) {
    await scratch.drop().catch(() => {});
    throw error;
  }
}

interface Target {
  endpoint: Endpoint;
  /** Setup and checks from the main thread, not under load. */
  client: Client;
}

async function startServer(store: Store, given: Notifier | undefined): Promise<{ target: Target; parked: () => number; close(): Promise<void> }> {
  const adminToken = randomBytes(24).toString('hex');
  const clock = new SystemClock();
  // Held here (not left to createBaton) so the wake phase can count the parked polls.
  const notifier = given ?? new LocalNotifier(clock);
  const baton = await createBaton({ store, clock, adminToken, bootstrap: false, notifier });
  baton.background.start(); // the sweeps run as under `npm start`
  const baseUrl = await baton.app.listen({ host: '127.0.0.1', port: 0 });
  const admin = new Client({ baseUrl, spaceId: '', key: '' }, 1, '/admin/v1', `Bearer ${adminToken}`);
  let client: Client | undefined;
  const close = async () => {
    await admin.close();
    await client?.close();
    await baton.drainAndClose();
  };
  try {
    const noCaps = { operationsPerMonth: null, agentsAtOnce: null, requestsPerMinute: null, activeRuns: null, activeTasks: null };
    const org = (await admin.post('/orgs', [201], { name: 'bench', plan: 'ENTERPRISE', limits: noCaps })).body;
    const space = (await admin.post(`/orgs/${org.id}/spaces`, [201], { name: 'bench' })).body;
    const key = (await admin.post(`/orgs/${org.id}/keys`, [201], { name: 'bench' })).body.secret as string;
    const endpoint = { baseUrl, spaceId: space.id as string, key };
    client = new Client(endpoint, 2);
    // The space's backlog cap (READY plus CLAIMED messages, default 1,000) must hold the drain's
    // queue. A tree without PUT /limits (404) has no such cap.
    await client.request('PUT', '/limits', [200, 404], { maxBacklog: 1_000_000 });
    return { target: { endpoint, client }, parked: () => (notifier as { parked?: number }).parked ?? NaN, close };
  } catch (error) {
    await close();
    throw error;
  }
}

async function newQueue(target: Target, runId: string, name: string): Promise<Queue> {
  const mailbox = (await target.client.post('/mailboxes', [201], { name: `${runId}-${name}`, backlogLimit: 100_000 }, `${runId}-mailbox-${name}`)).body;
  return { runId: `${runId}-${name}`, mailboxId: mailbox.id, scopeId: randomUUID() };
}

/** One of each resource a task can claim, with room far beyond what a run uses. */
async function createResources(target: Target, runId: string): Promise<{ resources: Resources; ids: { pool: string; workLimit: string } }> {
  const name = `${runId}-r`;
  const c = target.client;
  const pool = (await c.post('/pools', [201], { name, capacity: 1_000 }, `${runId}-pool`)).body;
  await c.post('/allowances', [201], { name, unitsLimit: 1_000_000, windowSeconds: 3_600 }, `${runId}-allowance`);
  await c.post('/budgets', [201], { name, currency: 'USD', scale: 2, limitMinor: '999999999999999999' }, `${runId}-budget`);
  const workLimit = (await c.post('/work-limits', [201], { name, maxConcurrent: 1_000 }, `${runId}-work-limit`)).body;
  return {
    resources: { requirements: { pools: [{ name, units: 1 }], quotas: [{ name, units: 1 }], budgets: [{ name, reserveMinor: '1' }] }, workLimit: name },
    ids: { pool: pool.id, workLimit: workLimit.id },
  };
}

/** Nothing left PENDING or RUNNING in the queue's scope: every submitted task was completed. */
async function checkDrained(target: Target, queue: Queue, what: string, problems: string[]): Promise<void> {
  const left = (await target.client.request('GET', `/tasks?scopeId=${queue.scopeId}&state=PENDING,RUNNING&limit=5`, [200])).body;
  if (left.items.length > 0) problems.push(`${what}: tasks left unfinished, e.g. ${left.items.map((t: any) => `${t.id} ${t.state}`).join(', ')}`);
}

// ---------------------------------------------------------------------------------------------
// Results and printing

export interface CycleRow {
  variant: 'no claims' | '4 claims';
  workers: number;
  result: CyclesResult;
}

export interface StoreResults {
  kind: StoreKind;
  cycles: CycleRow[];
  wake?: WakeResult;
  submit?: RateResult;
  drain?: RateResult;
  /** The drain by @baton-coordination/runtime workers with batching (the `runtime` phase). */
  runtimeDrain?: RateResult;
  problems: string[];
}

const p = (samples: Record<string, number[]>, label: string, q: number): number => new Latencies(samples).percentile(label, q);
const pp = (samples: Record<string, number[]>, label: string, qs = [50, 99]): string => qs.map((q) => fmt(p(samples, label, q), 2)).join(' / ');

function problemLines(what: string, problems: Problems): string[] {
  if (problems.count === 0) return [];
  return [`${what}: ${problems.count} failed request(s) by status ${JSON.stringify(problems.byStatus)}`, ...problems.first.map((m) => `  ${m}`)];
}

function printCycle(row: CycleRow): void {
  const r = row.result;
  console.log(
    `  ${row.variant.padEnd(9)} ${String(row.workers).padStart(3)} workers: ${fmt(r.measuredCycles / r.measuredSeconds).padStart(7)} cycles/s ` +
      `(${r.measuredCycles} in ${fmt(r.measuredSeconds, 2)} s)  submit ${pp(r.samples, 'submit')}  admit ${pp(r.samples, 'admit')}  complete ${pp(r.samples, 'complete')} ms p50/p99  ` +
      `204s ${r.emptyAdmits}  errors ${r.problems.count}`,
  );
}

function printTables(all: StoreResults[], config: Config): void {
  for (const s of all) {
    console.log(`\n### ${s.kind}\n`);
    if (s.cycles.length > 0) {
      console.log('| variant | workers | cycles/s | submit p50 / p99 ms | admit p50 / p99 ms | complete p50 / p99 ms | empty admits (204) | errors |');
      console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
      for (const { variant, workers, result: r } of s.cycles) {
        console.log(`| ${variant} | ${workers} | ${fmt(r.measuredCycles / r.measuredSeconds)} | ${pp(r.samples, 'submit')} | ${pp(r.samples, 'admit')} | ${pp(r.samples, 'complete')} | ${r.emptyAdmits} | ${r.problems.count} |`);
      }
    }
    if (s.wake) {
      const w = s.wake.samples;
      console.log(`\n| wake (${config.wakeIdle} idle workers, waitMs 10000) | samples | p50 ms | p90 ms | p99 ms | max ms |`);
      console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
      for (const [label, name] of [['fromReply', 'submit reply → admit reply'], ['fromSend', 'submit sent → admit reply'], ['submit', 'submit request itself']] as const) {
        console.log(`| ${name} | ${w[label]?.length ?? 0} | ${pp(w, label, [50])} | ${pp(w, label, [90])} | ${pp(w, label, [99])} | ${pp(w, label, [100])} |`);
      }
    }
    if (s.submit && s.drain) {
      const sub = s.submit;
      const dr = s.drain;
      console.log(`\n| drain | tasks | clients | seconds | per second | latency p50 / p99 ms | empty admits (204) | errors |`);
      console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
      console.log(`| submit first | ${sub.done} | ${config.drainSubmitters} | ${fmt(sub.seconds, 2)} | ${fmt(sub.done / sub.seconds)} | ${pp(sub.samples, 'submit')} | - | ${sub.problems.count} |`);
      console.log(
        `| admit + complete until empty | ${dr.done} | ${config.drainWorkers} | ${fmt(dr.seconds, 2)} | ${fmt(dr.done / dr.seconds)} jobs/s | admit ${pp(dr.samples, 'admit')}, complete ${pp(dr.samples, 'complete')} | ${dr.emptyAdmits} | ${dr.problems.count} |`,
      );
    }
    if (s.problems.length > 0) {
      console.log(`\n${s.kind} problems:`);
      for (const line of s.problems) console.log(`  ${line}`);
    }
  }
}

// ---------------------------------------------------------------------------------------------

/** The main thread's heap after a full collection (the server's; the clients run in a worker thread, with a heap of their own). */
function heapAfterGc(): number {
  collectGarbage();
  return getHeapStatistics().used_heap_size;
}

/** V8's gc() without --expose-gc on the command line: the flag set now, gc taken from a fresh context. */
const collectGarbage = ((): (() => void) => {
  setFlagsFromString('--expose_gc');
  return runInNewContext('gc') as () => void;
})();

/** The server's heap once `idle` polls are parked at once (undefined when the job ended first or they never all parked). */
async function heapWhenParked(parked: () => number, idle: number, running: Promise<unknown>): Promise<number | undefined> {
  let ended = false;
  void running.finally(() => (ended = true)).catch(() => undefined);
  while (!ended) {
    if (parked() >= idle) return heapAfterGc();
    await sleep(5);
  }
  return undefined;
}

export async function runStore(kind: StoreKind, config: Config): Promise<StoreResults | undefined> {
  const opened = kind === 'pglite' ? await openPglite() : await openPostgres();
  if (!opened) return undefined;
  console.log(`\n== ${opened.label}`);
  const results: StoreResults = { kind, cycles: [], problems: [] };
  const runId = `bench-${randomUUID().slice(0, 8)}`;
  try {
    const server = await startServer(opened.store, opened.notifier);
    const { target } = server;
    try {
      const noteProblems = (what: string, problems: Problems) => {
        const lines = problemLines(what, problems);
        results.problems.push(...lines);
        for (const line of lines) console.log(`  ${line}`);
      };
      const cycleLimit = config.warmupSeconds + config.seconds + 120;

      for (const variant of ['cycles', 'claims'] as const) {
        if (!config.phases.includes(variant)) continue;
        const made = variant === 'claims' ? await createResources(target, runId) : undefined;
        for (const workers of config.workers) {
          const queue = await newQueue(target, runId, `${variant}-${workers}`);
          const spec: JobSpec = { kind: 'cycles', queue, workers, warmupSeconds: config.warmupSeconds, seconds: config.seconds, resources: made?.resources ?? null };
          const result = await runJob<CyclesResult>(target.endpoint, spec, cycleLimit);
          const row: CycleRow = { variant: variant === 'claims' ? '4 claims' : 'no claims', workers, result };
          results.cycles.push(row);
          printCycle(row);
          noteProblems(`${variant} ${workers} workers`, result.problems);
          await checkDrained(target, queue, `${variant} ${workers} workers`, results.problems);
        }
        if (made) {
          // Completed tasks release their pool units and work-limit slots.
          const pool = (await target.client.request('GET', `/pools/${made.ids.pool}`, [200])).body;
          const limit = (await target.client.request('GET', `/work-limits/${made.ids.workLimit}`, [200])).body;
          if (pool.inUse !== 0 || limit.inUse !== 0) results.problems.push(`claims: after the runs pool inUse ${pool.inUse}, work limit inUse ${limit.inUse} (expected 0)`);
        }
      }

      if (config.phases.includes('wake')) {
        const queue = await newQueue(target, runId, 'wake');
        const heapBefore = heapAfterGc();
        // The first sample waits 3 s once all have parked: the heap is measured (a full collection) meanwhile.
        const spec = { kind: 'wake' as const, queue, idle: config.wakeIdle, samples: config.wakeSamples, waitMs: 10_000, quietMs: 3_000 };
        const running = runJob<WakeResult>(target.endpoint, spec, config.wakeSamples * 2 + 120);
        const parkedHeap = await heapWhenParked(server.parked, config.wakeIdle, running);
        const wake = await running;
        if (parkedHeap !== undefined) {
          const perPollKiB = (parkedHeap - heapBefore) / config.wakeIdle / 1024;
          console.log(`  wake: ${config.wakeIdle} polls parked: the server's heap grew ${fmt((parkedHeap - heapBefore) / 1024 / 1024, 2)} MiB, ${fmt(perPollKiB, 2)} KiB per parked poll`);
          wake.heapPerParkedPollKiB = perPollKiB;
        }
        results.wake = wake;
        console.log(
          `  wake: ${wake.samples.fromReply?.length ?? 0} samples, submit reply → admit reply p50 ${pp(wake.samples, 'fromReply', [50])} ms p99 ${pp(wake.samples, 'fromReply', [99])} ms; ` +
            `submit sent → admit reply p50 ${pp(wake.samples, 'fromSend', [50])} ms p99 ${pp(wake.samples, 'fromSend', [99])} ms; ` +
            `submit p50 ${pp(wake.samples, 'submit', [50])} ms p99 ${pp(wake.samples, 'submit', [99])} ms (${config.wakeIdle} parked); 204s ${wake.emptyAdmits}`,
        );
        noteProblems('wake', wake.problems);
        await checkDrained(target, queue, 'wake', results.problems);
      }

      if (config.phases.includes('drain')) {
        const queue = await newQueue(target, runId, 'drain');
        const submit = await runJob<RateResult>(target.endpoint, { kind: 'submit', queue, tasks: config.drainTasks, submitters: config.drainSubmitters, batch: config.submitBatch }, 1_800);
        results.submit = submit;
        console.log(`  drain: submitted ${submit.done} tasks in ${fmt(submit.seconds, 2)} s = ${fmt(submit.done / submit.seconds)} submits/s (${config.drainSubmitters} clients)`);
        noteProblems('drain submit', submit.problems);
        const drain = await runJob<RateResult>(target.endpoint, { kind: 'drain', queue, tasks: submit.done, workers: config.drainWorkers, batch: config.drainBatch }, 1_800);
        results.drain = drain;
        console.log(`  drain: ${drain.done} tasks admitted and completed in ${fmt(drain.seconds, 2)} s = ${fmt(drain.done / drain.seconds)} jobs/s (${config.drainWorkers} workers, ${drain.emptyAdmits} empty admits)`);
        noteProblems('drain', drain.problems);
        await checkDrained(target, queue, 'drain', results.problems);
        if (drain.done !== submit.done) results.problems.push(`drain: ${submit.done} submitted but ${drain.done} completed`);
      }

      if (config.phases.includes('runtime')) {
        const queue = await newQueue(target, runId, 'runtime');
        const submit = await runJob<RateResult>(target.endpoint, { kind: 'submit', queue, tasks: config.drainTasks, submitters: config.drainSubmitters, batch: config.submitBatch }, 1_800);
        console.log(`  runtime drain: submitted ${submit.done} tasks in ${fmt(submit.seconds, 2)} s = ${fmt(submit.done / submit.seconds)} submits/s (${config.drainSubmitters} clients, ${config.submitBatch} per request)`);
        noteProblems('runtime submit', submit.problems);
        const spec = { kind: 'runtimeDrain' as const, queue, tasks: submit.done, workers: config.runtimeWorkers, concurrency: config.runtimeConcurrency, batching: config.runtimeBatching };
        const drain = await runJob<RateResult>(target.endpoint, spec, 1_800);
        results.runtimeDrain = drain;
        console.log(`  runtime drain: ${drain.done} tasks completed in ${fmt(drain.seconds, 2)} s = ${fmt(drain.done / drain.seconds)} jobs/s (${spec.workers} runtime workers × concurrency ${spec.concurrency}, batching ${JSON.stringify(spec.batching)})`);
        noteProblems('runtime drain', drain.problems);
        await checkDrained(target, queue, 'runtime drain', results.problems);
        if (drain.done !== submit.done) results.problems.push(`runtime drain: ${submit.done} submitted but ${drain.done} completed`);
      }
    } finally {
      await server.close();
    }
  } finally {
    await opened.cleanup();
  }
  return results;
}

async function run(options: BenchOptions): Promise<void> {
  const config = configOf(options);
  process.once('SIGINT', () => {
    interrupted = true;
    for (const worker of running) void worker.terminate();
  });
  console.log(
    `tasks: phases ${config.phases.join(', ')}; cycles with ${config.workers.join(', ')} workers (${config.warmupSeconds} s warm-up, ${config.seconds} s measured); ` +
      `wake ${config.wakeSamples} samples, ${config.wakeIdle} idle workers; drain ${config.drainTasks} tasks, ${config.drainSubmitters} submitters, ${config.drainWorkers} workers${config.quick ? ' (quick)' : ''}`,
  );
  const all: StoreResults[] = [];
  for (const kind of options.stores) {
    const result = await runStore(kind, config);
    if (result) all.push(result);
    else if (options.stores.length === 1) throw new BenchFailure('postgres was asked for but is unreachable');
  }
  printTables(all, config);
  const failed = all.filter((s) => s.problems.length > 0);
  if (failed.length > 0) throw new BenchFailure(`problems on ${failed.map((s) => s.kind).join(', ')} (listed above)`);
}

export const tasksBenchmark: Benchmark = {
  description: 'task cycles (submit, admit, complete) over HTTP: throughput, admit wake latency, a 20,000-task drain (PGlite and PostgreSQL)',
  run,
};
