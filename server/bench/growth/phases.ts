/**
 * The measured requests, one kind per phase and one request at a time, each phase wrapped in
 * pg_stat_statements snapshots so its statements and buffers divide by its request count.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { BenchFailure } from '../harness';
import type { Client } from './api';
import { delta, type ClusterMonitor, type StatementCounters } from './cluster';

export const requestKinds = ['submit', 'admit', 'complete', 'submit-batch', 'admit-batch', 'complete-batch', 'events', 'events-start', 'watch', 'cycle'] as const;
export type RequestKind = (typeof requestKinds)[number];

export const kindNotes: Record<RequestKind, string> = {
  submit: 'POST /tasks (with Idempotency-Key)',
  admit: 'POST /tasks/admit, waitMs 0 (with Idempotency-Key)',
  complete: 'POST /messages/{id}/complete',
  'submit-batch': 'POST /tasks/submit-batch of 50',
  'admit-batch': 'POST /tasks/admit-batch, maxTasks 50',
  'complete-batch': 'POST /messages/complete-batch of 50',
  events: 'GET /events?cursor=<tail before the phases>&limit=100',
  'events-start': 'GET /events?limit=100 (from the journal start)',
  watch: 'GET /watch?cursor=<tail>&scopeId=<measured scope>&waitSeconds=0&limit=100',
  cycle: 'submit → admit → complete, one task, sequential',
};

export interface PhaseResult {
  kind: RequestKind;
  samplesMs: number[];
  /** pg_stat_statements' change over the phase (this database, top-level statements). */
  statements: StatementCounters[];
}

export interface Queue {
  mailboxId: string;
  scopeId: string;
}

export interface Sizes {
  singles: number;
  batches: number;
  batchSize: number;
  cycles: number;
}

interface Admitted {
  messageId: string;
  taskId: string;
  token: string;
}

/** Requests against one queue; the task keys carry a run id, so warm-up, measured and explain passes never collide. */
export class Requests {
  private readonly session = randomUUID();
  private n = 0;

  constructor(
    private readonly api: Client,
    private readonly queue: Queue,
    private readonly tag: string,
  ) {}

  private key(): string {
    return `growth-${this.tag}-${this.n++}`;
  }

  private admitBody(extra: object = {}) {
    return { scopeId: this.queue.scopeId, mailboxId: this.queue.mailboxId, holder: 'growth-worker', holderSession: this.session, leaseSeconds: 120, waitMs: 0, ...extra };
  }

  private task(key: string) {
    return { scopeId: this.queue.scopeId, mailboxId: this.queue.mailboxId, taskKey: key, input: { n: this.n } };
  }

  async submit(): Promise<string> {
    const key = this.key();
    const reply = (await this.api.post('/tasks', [201], this.task(key), key)).body;
    if (reply.created !== true) throw new BenchFailure(`submit: not created ${JSON.stringify(reply)}`);
    return reply.taskId;
  }

  async admit(): Promise<Admitted> {
    const reply = await this.api.post('/tasks/admit', [200], this.admitBody(), `${this.key()}-admit`);
    return reply.body as Admitted;
  }

  async complete(d: Admitted): Promise<void> {
    const reply = (await this.api.post(`/messages/${d.messageId}/complete`, [200], { token: d.token })).body;
    if (reply.state !== 'ACKED') throw new BenchFailure(`complete: ${JSON.stringify(reply).slice(0, 300)}`);
  }

  async submitBatch(size: number): Promise<string[]> {
    const tasks = Array.from({ length: size }, () => this.task(this.key()));
    const reply = (await this.api.post('/tasks/submit-batch', [200], { tasks }, `${this.key()}-batch`)).body;
    const created = (reply.items as any[]).filter((i) => i.status === 201);
    if (created.length !== size) throw new BenchFailure(`submit-batch: ${created.length} of ${size} created: ${JSON.stringify(reply).slice(0, 400)}`);
    return created.map((i) => i.body.taskId);
  }

  async admitBatch(size: number): Promise<Admitted[]> {
    const reply = (await this.api.post('/tasks/admit-batch', [200], this.admitBody({ maxTasks: size }), `${this.key()}-admit-batch`)).body;
    if (reply.items.length !== size) throw new BenchFailure(`admit-batch: ${reply.items.length} of ${size} admitted`);
    return reply.items;
  }

  async completeBatch(items: Admitted[]): Promise<void> {
    const reply = (await this.api.post('/messages/complete-batch', [200], { items: items.map((d) => ({ messageId: d.messageId, token: d.token })) })).body;
    const acked = (reply.items as any[]).filter((i) => i.status === 200 && i.body?.state === 'ACKED').length;
    if (acked !== items.length) throw new BenchFailure(`complete-batch: ${items.length - acked} of ${items.length} not ACKED`);
  }

  async events(cursor: string | undefined): Promise<void> {
    const reply = (await this.api.get(`/events?limit=100${cursor === undefined ? '' : `&cursor=${cursor}`}`)).body;
    if (reply.items.length !== 100) throw new BenchFailure(`events: a page of ${reply.items.length}, expected 100`);
  }

  async watch(cursor: string): Promise<void> {
    const reply = (await this.api.get(`/watch?limit=100&waitSeconds=0&cursor=${cursor}&scopeId=${this.queue.scopeId}`)).body;
    if (reply.items.length === 0) throw new BenchFailure('watch: an empty page');
  }
}

/** Everything a phase measures; each step is one timed request (or one timed cycle). */
type Step = () => Promise<void>;

async function measure(kind: RequestKind, monitor: ClusterMonitor, dbid: number, steps: Step[]): Promise<PhaseResult> {
  const before = await monitor.snapshot(dbid);
  const samplesMs: number[] = [];
  for (const step of steps) {
    const t0 = performance.now();
    await step();
    samplesMs.push(performance.now() - t0);
  }
  const after = await monitor.snapshot(dbid);
  return { kind, samplesMs, statements: delta(before, after) };
}

/** One of each request, untimed: the server's and PostgreSQL's caches and plans warm before the phases. */
export async function warmUp(r: Requests, sizes: Sizes, cursor: string): Promise<void> {
  for (let i = 0; i < 30; i++) {
    await r.submit();
    await r.complete(await r.admit());
  }
  for (let i = 0; i < 2; i++) {
    await r.submitBatch(sizes.batchSize);
    await r.completeBatch(await r.admitBatch(sizes.batchSize));
  }
  for (let i = 0; i < 5; i++) {
    await r.events(cursor);
    await r.events(undefined);
    await r.watch(cursor);
  }
}

/**
 * The measured phases in order: N submits, then N admits (each takes one of them), N completes;
 * the batch twins likewise; the journal reads; then N whole cycles. `cursor` is the journal's tail
 * before the phases, so the reads after it return the phases' own events (more than a page).
 */
export async function runPhases(r: Requests, sizes: Sizes, cursor: string, monitor: ClusterMonitor, dbid: number, only?: RequestKind[]): Promise<PhaseResult[]> {
  const wanted = (k: RequestKind) => only === undefined || only.includes(k);
  const results: PhaseResult[] = [];
  const times = <T>(n: number, f: () => T): T[] => Array.from({ length: n }, f);
  const admitted: Admitted[] = [];
  if (wanted('submit') || wanted('admit') || wanted('complete')) {
    results.push(await measure('submit', monitor, dbid, times(sizes.singles, () => async () => void (await r.submit()))));
    results.push(await measure('admit', monitor, dbid, times(sizes.singles, () => async () => void admitted.push(await r.admit()))));
    results.push(await measure('complete', monitor, dbid, admitted.map((d) => () => r.complete(d))));
  }
  if (wanted('submit-batch') || wanted('admit-batch') || wanted('complete-batch')) {
    const batches: Admitted[][] = [];
    results.push(await measure('submit-batch', monitor, dbid, times(sizes.batches, () => async () => void (await r.submitBatch(sizes.batchSize)))));
    results.push(await measure('admit-batch', monitor, dbid, times(sizes.batches, () => async () => void batches.push(await r.admitBatch(sizes.batchSize)))));
    results.push(await measure('complete-batch', monitor, dbid, batches.map((b) => () => r.completeBatch(b))));
  }
  if (wanted('events')) results.push(await measure('events', monitor, dbid, times(sizes.singles, () => () => r.events(cursor))));
  if (wanted('events-start')) results.push(await measure('events-start', monitor, dbid, times(sizes.singles, () => () => r.events(undefined))));
  if (wanted('watch')) results.push(await measure('watch', monitor, dbid, times(sizes.singles, () => () => r.watch(cursor))));
  if (wanted('cycle')) {
    results.push(
      await measure('cycle', monitor, dbid, times(sizes.cycles, () => async () => {
        await r.submit();
        await r.complete(await r.admit());
      })),
    );
  }
  return results.filter((p) => wanted(p.kind));
}
