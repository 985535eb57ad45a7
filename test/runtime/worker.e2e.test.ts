import { randomUUID } from 'node:crypto';
import { ManualClock } from '@baton/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startLiveServer, type LiveServer } from '../support/live-server';
import { createClient, type BatonClient, type ClientOptions, systemClock, type RuntimeClock, fetchTransport, type Transport, type TransportRequest, type TransportResponse, createWorker, DeliveryAbortedError, PermanentError, type Worker, type WorkerEvent, type WorkerOptions } from '@baton-coordination/runtime';

/**
 * The worker against a live server on embedded PGlite. The server runs on a ManualClock that
 * only the admin API moves (`POST /admin/v1/clock/advance`, which also runs the lease sweep), and
 * every worker here reads that same clock (`workerClock`): the worker's lease deadline, its renew
 * timer and its drain deadline move exactly when the server's leases do, so lease loss and drain
 * deadlines happen on cue instead of after real seconds. The background sweep is not started:
 * leases expire only on an advance.
 */

let server: LiveServer;
let serverClock: ManualClock;

/** Moves the server's clock (and so every worker's) and runs the work that fell due: the lease sweep. */
const advance = (ms: number): Promise<unknown> => server.admin('/clock/advance', { ms });

/** The server's ManualClock as a RuntimeClock: sleeps end when an advance passes them. */
function workerClock(clock: ManualClock): RuntimeClock {
  return {
    now: () => clock.now(),
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason);
        // A zero sleep is "yield", not "wait for the next advance".
        if (ms <= 0) return void setImmediate(resolve);
        const onAbort = (): void => {
          cancel();
          reject(signal!.reason);
        };
        const cancel = clock.schedule(ms, () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        });
        signal?.addEventListener('abort', onAbort, { once: true });
      }),
  };
}

const clientWith = (options: Partial<ClientOptions> = {}): BatonClient =>
  createClient({ baseUrl: server.baseUrl, apiKey: server.apiKey, spaceId: server.spaceId, timeoutMs: 5_000, retry: { baseDelayMs: 10, maxDelayMs: 50 }, ...options });

beforeAll(async () => {
  serverClock = new ManualClock(Date.now());
  // SCALE: its requests-per-minute limit is far above what this file sends (the window never
  // rolls over on a clock that moves only a few seconds).
  server = await startLiveServer({ clock: serverClock, plan: 'SCALE', name: 'worker-e2e' });
});

afterAll(async () => server?.close());

// ---------------------------------------------------------------------------------------------
// Helpers

const workers: Worker[] = [];
afterEach(async () => {
  // A failed test must not leave a worker admitting into the next one.
  await Promise.all(workers.splice(0).map((worker) => worker.stop({ deadlineMs: 0 })));
});

interface Started {
  worker: Worker;
  events: WorkerEvent[];
}

function startWorker(options: Omit<WorkerOptions, 'holder' | 'leaseSeconds' | 'clock'> & { leaseSeconds?: number }): Started {
  const events: WorkerEvent[] = [];
  const worker = createWorker({
    holder: 'e2e-worker',
    leaseSeconds: 30,
    clock: workerClock(serverClock),
    ...options,
    onEvent: (event) => events.push(event),
  });
  workers.push(worker);
  worker.start();
  return { worker, events };
}

/** Its own mailbox and scope per test: admits never see another test's tasks. */
async function newQueue(name: string): Promise<{ mailboxId: string; scopeId: string }> {
  const mailbox = await clientWith().createMailbox({ name: `${name}-${randomUUID().slice(0, 8)}` });
  return { mailboxId: mailbox.id, scopeId: randomUUID() };
}

/** Submitted one by one, so the send order (the admit order) is the inputs' order. */
async function submitAll(queue: { mailboxId: string; scopeId: string }, inputs: unknown[]): Promise<string[]> {
  const client = clientWith();
  const ids: string[] = [];
  for (const [i, input] of inputs.entries()) ids.push((await client.submitTask({ ...queue, taskKey: `${queue.mailboxId}-${i}`, input })).taskId);
  return ids;
}

type TaskView = Awaited<ReturnType<BatonClient['getTask']>>;

async function tasksById(scopeId: string): Promise<Map<string, TaskView>> {
  const page = await clientWith().listTasks({ scopeId, limit: 500 });
  return new Map(page.items.map((task) => [task.id, task]));
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor<T>(what: string, probe: () => T | Promise<T>, ok: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const endMs = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (ok(value)) return value;
    if (Date.now() > endMs) throw new Error(`timed out waiting for ${what}`);
    await pause(20);
  }
}

const allInState = (ids: string[], state: TaskView['state']) => (tasks: Map<string, TaskView>) => ids.every((id) => tasks.get(id)?.state === state);

/** The whole journal of the space (message events live here: their aggregate is the mailbox). */
async function journal(): Promise<{ type: string; data: Record<string, unknown> }[]> {
  const client = clientWith();
  const all: { type: string; data: Record<string, unknown> }[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await client.listEvents({ limit: 500, ...(cursor === undefined ? {} : { cursor }) });
    all.push(...page.items);
    if (page.items.length < 500) return all;
    cursor = page.nextCursor;
  }
}

const messageEvents = async (messageId: string, type: string) => (await journal()).filter((e) => e.type === type && e.data.messageId === messageId);

interface Exchanged {
  request: TransportRequest;
  response: TransportResponse | null;
  path: string;
  atMs: number;
}

/** A transport that records every exchange (request and reply) the worker's client makes. */
function recording(inner: Transport = fetchTransport): { transport: Transport; log: Exchanged[] } {
  const log: Exchanged[] = [];
  const transport: Transport = async (request) => {
    const entry: Exchanged = { request, response: null, path: new URL(request.url).pathname, atMs: Date.now() };
    log.push(entry);
    entry.response = await inner(request);
    return entry.response;
  };
  return { transport, log };
}

const bodyOf = (entry: Exchanged): any => JSON.parse(entry.request.body ?? '{}');
const replyOf = (entry: Exchanged): any => (entry.response && entry.response.body ? JSON.parse(entry.response.body) : null);

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

// ---------------------------------------------------------------------------------------------

describe('worker against a live server', () => {
  it('completes every task with concurrency 2; the outcomes are what the handler returned', async () => {
    const queue = await newQueue('normal');
    const ids = await submitAll(queue, Array.from({ length: 8 }, (_, n) => ({ n })));
    let running = 0;
    let maxRunning = 0;
    const { worker, events } = startWorker({
      client: clientWith(),
      ...queue,
      concurrency: 2,
      handler: async ({ delivery }) => {
        maxRunning = Math.max(maxRunning, ++running);
        await pause(50);
        running--;
        return { doubled: (delivery.input as { n: number }).n * 2, taskId: delivery.taskId };
      },
    });

    const tasks = await waitFor('all tasks SUCCEEDED', () => tasksById(queue.scopeId), allInState(ids, 'SUCCEEDED'));
    ids.forEach((id, n) => expect(tasks.get(id)).toMatchObject({ state: 'SUCCEEDED', attempts: 1, outcome: { doubled: n * 2, taskId: id } }));
    expect(maxRunning).toBe(2);
    await worker.stop({ deadlineMs: 1_000 });
    expect(worker.stats).toEqual({ admitted: 8, completed: 8, failed: 0, leaseLost: 0, inFlight: 0 });
    expect(events.filter((e) => e.type === 'error')).toEqual([]);
    expect(events.at(-1)).toEqual({ type: 'stopped' });
  });

  it('retries a failed attempt (SUCCEEDED after 2) and fails a PermanentError after one', async () => {
    const queue = await newQueue('retries');
    const [flaky, bad] = await submitAll(queue, ['flaky', 'bad']);
    const seen: string[] = [];
    const { worker, events } = startWorker({
      client: clientWith(),
      ...queue,
      concurrency: 1,
      handler: ({ delivery }) => {
        seen.push(`${String(delivery.input)}#${delivery.attempt}`);
        if (delivery.input === 'bad') throw new PermanentError('cannot work on this');
        if (delivery.attempt === 1) throw new Error('transient');
        return `ok on attempt ${delivery.attempt}`;
      },
    });

    const tasks = await waitFor('both tasks terminal', () => tasksById(queue.scopeId), (t) => t.get(flaky!)?.state === 'SUCCEEDED' && t.get(bad!)?.state === 'FAILED');
    expect(tasks.get(flaky!)).toMatchObject({ attempts: 2, outcome: 'ok on attempt 2', failureReason: null });
    expect(tasks.get(bad!)).toMatchObject({ attempts: 1, failureReason: 'NACKED' });
    expect(seen.filter((s) => s.startsWith('bad'))).toEqual(['bad#1']);
    expect(seen.filter((s) => s.startsWith('flaky'))).toEqual(['flaky#1', 'flaky#2']);
    await worker.stop({ deadlineMs: 1_000 });
    const nacks = events.filter((e) => e.type === 'failed');
    expect(nacks).toHaveLength(2);
    expect(nacks).toContainEqual(expect.objectContaining({ taskId: flaky, retry: true, reason: 'handler' }));
    expect(nacks).toContainEqual(expect.objectContaining({ taskId: bad, retry: false, reason: 'handler', error: expect.any(PermanentError) }));
    expect(worker.stats).toMatchObject({ admitted: 3, completed: 1, failed: 2 });
  });

  it.each([
    { mode: 'single routes', batching: false as const },
    { mode: 'batching', batching: undefined },
  ])('loses a lease mid-handler ($mode): the signal aborts, the stale token is never used, the next attempt completes', async ({ batching }) => {
    const queue = await newQueue('lease-loss');
    const [taskId] = await submitAll(queue, ['slow']);
    const { transport, log } = recording();
    const firstStarted = deferred();
    let abortReason: unknown;
    const { worker, events } = startWorker({
      client: clientWith({ transport }),
      ...queue,
      concurrency: 1,
      leaseSeconds: 5, // the server's minimum
      ...(batching === false ? { batching } : {}),
      handler: async ({ delivery, signal }) => {
        if (delivery.attempt > 1) return { attempt: delivery.attempt };
        firstStarted.resolve();
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        abortReason = signal.reason;
        // A handler that returns a value after the abort: the worker must not complete with it.
        return { attempt: delivery.attempt, stale: true };
      },
    });
    await firstStarted.promise;

    // Past the 5 s lease in one step: the worker's renew timer and its deadline both fall due
    // inside the jump, so the renew is too late, and the sweep returns the delivery to READY.
    await advance(6_000);

    const tasks = await waitFor('the task SUCCEEDED', () => tasksById(queue.scopeId), allInState([taskId!], 'SUCCEEDED'));
    expect(tasks.get(taskId!)).toMatchObject({ attempts: 2, outcome: { attempt: 2 } });
    await worker.stop({ deadlineMs: 1_000 });

    expect(abortReason).toBeInstanceOf(DeliveryAbortedError);
    expect(abortReason).toMatchObject({ why: 'lease_lost' });
    expect(events.filter((e) => e.type === 'lease_lost')).toEqual([expect.objectContaining({ taskId, cause: expect.stringMatching(/^(EXPIRED|LEASE_LOST)$/) })]);
    expect(events.filter((e) => e.type === 'renewed')).toEqual([]);
    expect(worker.stats).toMatchObject({ admitted: 2, completed: 1, failed: 0, leaseLost: 1, inFlight: 0 });

    // What went over the wire: the first claim's token was never sent with a complete or a nack.
    const admitted = log.filter((e) => /\/tasks\/admit(-batch)?$/.test(e.path) && e.response?.status === 200);
    const admits = admitted.flatMap((e) => (e.path.endsWith('-batch') ? replyOf(e).items : [replyOf(e)]));
    expect(admits.map((a) => a.attempt)).toEqual([1, 2]);
    const [staleToken, liveToken] = admits.map((a) => a.token as string);
    // A finish is a single complete or nack, or an item of a batch of them.
    const finishes = log
      .filter((e) => /\/messages\/([^/]+\/(complete|nack)|(complete|nack)-batch)$/.test(e.path))
      .flatMap((e) => (e.path.endsWith('-batch') ? bodyOf(e).items.map((item: { token: string }) => [e.path.split('/').pop()!.replace('-batch', ''), item.token]) : [[e.path.split('/').pop(), bodyOf(e).token]]));
    expect(finishes.map(([what, token]) => [what, token === staleToken ? 'stale' : token === liveToken ? 'live' : 'other'])).toEqual([['complete', 'live']]);

    // What the server recorded: attempt 1 expired, only attempt 2 was acked.
    const messageId = admits[0].messageId as string;
    expect((await messageEvents(messageId, 'message.lease_expired')).map((e) => e.data.attempt)).toEqual([1]);
    expect((await messageEvents(messageId, 'message.acked')).map((e) => e.data.attempt)).toEqual([2]);
    const debug = await clientWith().getTaskDebug(taskId!);
    expect(debug.attempts.map((a) => [a.attempt, a.holderSession])).toEqual([
      [1, worker.holderSession],
      [2, worker.holderSession],
    ]);
    expect(debug.events.filter((e) => e.type === 'task.requeued').map((e) => e.data.attempt)).toEqual([1]);
    expect(debug.events.filter((e) => e.type === 'task.succeeded').map((e) => e.data.attempt)).toEqual([2]);
  });

  it('drains under load: finished handlers complete, stuck ones are nacked back, nothing is admitted after stop', async () => {
    const queue = await newQueue('drain');
    // Tasks 0 and 2 get stuck (until their signal aborts); the rest wait for a gate the test opens.
    const ids = await submitAll(queue, Array.from({ length: 16 }, (_, i) => ({ i, stuck: i === 0 || i === 2 })));
    const gate = deferred();
    const drainAborts: unknown[] = [];
    const { transport, log } = recording();
    const first = startWorker({
      client: clientWith({ transport }),
      ...queue,
      concurrency: 4,
      handler: async ({ delivery, signal }) => {
        if ((delivery.input as { stuck: boolean }).stuck) {
          await new Promise<void>((_, reject) =>
            signal.addEventListener('abort', () => {
              drainAborts.push(signal.reason);
              reject(signal.reason);
            }, { once: true }),
          );
        }
        await gate.promise;
        return { done: (delivery.input as { i: number }).i };
      },
    });
    await waitFor('4 handlers running', () => first.worker.stats.inFlight, (n) => n === 4);
    // Oldest first: the four in flight are the first four submitted.
    expect(first.events.flatMap((e) => (e.type === 'admitted' ? [e.delivery.taskId] : []))).toEqual(ids.slice(0, 4));

    const stopped = first.worker.stop({ deadlineMs: 2_000 });
    const admitsAtStop = log.filter((e) => e.path.endsWith('/tasks/admit')).length;
    gate.resolve(); // tasks 1 and 3 finish well within the deadline
    await waitFor('the two finished handlers completed', () => first.worker.stats.completed, (n) => n === 2);
    expect(first.worker.stats.inFlight).toBe(2);
    let stopDone = false;
    void stopped.then(() => (stopDone = true));
    await pause(50);
    expect(stopDone).toBe(false); // the stuck two hold the drain until its deadline

    await advance(2_000); // the drain deadline (on the worker's clock, which is the server's)
    await stopped;
    expect(drainAborts).toHaveLength(2);
    drainAborts.forEach((reason) => expect(reason).toMatchObject({ name: 'DeliveryAbortedError', why: 'drain' }));
    expect(first.worker.stats).toEqual({ admitted: 4, completed: 2, failed: 2, leaseLost: 0, inFlight: 0 });
    const handedBack = first.events.filter((e) => e.type === 'failed');
    expect(handedBack).toHaveLength(2);
    for (const i of [0, 2]) expect(handedBack).toContainEqual(expect.objectContaining({ taskId: ids[i], retry: true, reason: 'drain' }));
    expect(log.filter((e) => e.path.endsWith('/tasks/admit')).length).toBe(admitsAtStop);

    const afterDrain = await tasksById(queue.scopeId);
    expect([0, 2].map((i) => afterDrain.get(ids[i]!))).toEqual([0, 2].map(() => expect.objectContaining({ state: 'PENDING', attempts: 1 })));
    expect([1, 3].map((i) => afterDrain.get(ids[i]!))).toEqual([1, 3].map((i) => expect.objectContaining({ state: 'SUCCEEDED', attempts: 1, outcome: { done: i } })));
    expect(ids.slice(4).map((id) => afterDrain.get(id))).toEqual(ids.slice(4).map(() => expect.objectContaining({ state: 'PENDING', attempts: 0 })));

    // A second worker takes what is left, the two handed back first (oldest first).
    const second = startWorker({ client: clientWith(), ...queue, concurrency: 4, handler: ({ delivery }) => ({ done: (delivery.input as { i: number }).i }) });
    const tasks = await waitFor('all tasks SUCCEEDED', () => tasksById(queue.scopeId), allInState(ids, 'SUCCEEDED'));
    ids.forEach((id, i) => expect(tasks.get(id)).toMatchObject({ outcome: { done: i }, attempts: i === 0 || i === 2 ? 2 : 1 }));
    await second.worker.stop({ deadlineMs: 1_000 });
    expect(second.worker.stats).toMatchObject({ admitted: 14, completed: 14, failed: 0 });
  });

  it.each([
    { route: '/tasks/admit', batching: false as const },
    { route: '/tasks/admit-batch', batching: undefined },
  ])('waits out a 429 with Retry-After on $route, then completes the task', async ({ route, batching }) => {
    const queue = await newQueue('rate-limited');
    const [taskId] = await submitAll(queue, ['limited']);
    const admitAtMs: number[] = [];
    const refusal: TransportResponse = {
      status: 429,
      headers: { 'content-type': 'application/json', 'retry-after': '1', 'x-request-id': 'fake-429' },
      body: JSON.stringify({ error: { code: 'RATE_LIMITED', message: 'too many requests', requestId: 'fake-429' } }),
    };
    const limited: Transport = async (request) => {
      if (new URL(request.url).pathname.endsWith(route)) {
        admitAtMs.push(Date.now());
        if (admitAtMs.length === 1) return refusal;
      }
      return fetchTransport(request);
    };
    // The client's own clock (backoff sleeps, attempt timeouts): the system's, with its sleeps recorded.
    const sleeps: number[] = [];
    const clientClock: RuntimeClock = { now: () => systemClock.now(), sleep: (ms, signal) => (sleeps.push(ms), systemClock.sleep(ms, signal)) };
    const { worker, events } = startWorker({ client: clientWith({ transport: limited, clock: clientClock }), ...queue, concurrency: 1, handler: () => 'through', batching });

    const tasks = await waitFor('the task SUCCEEDED', () => tasksById(queue.scopeId), allInState([taskId!], 'SUCCEEDED'));
    expect(tasks.get(taskId!)).toMatchObject({ attempts: 1, outcome: 'through' });
    await worker.stop({ deadlineMs: 1_000 });
    expect(admitAtMs.length).toBeGreaterThanOrEqual(2);
    // Backoff is below 10 ms here; the wait was the server's Retry-After.
    expect(sleeps).toContain(1_000);
    expect(admitAtMs[1]! - admitAtMs[0]!).toBeGreaterThanOrEqual(990);
    // The client absorbed the 429: the worker saw no failed admit.
    expect(events.filter((e) => e.type === 'error')).toEqual([]);
  });

  it.each([
    { route: 'complete', path: /\/messages\/[^/]+\/complete$/, batching: false as const },
    { route: 'complete-batch', path: /\/messages\/complete-batch$/, batching: undefined },
  ])('heals a dropped $route reply by an idempotent retry: one ack, task SUCCEEDED once', async ({ path, batching }) => {
    const queue = await newQueue('dropped-reply');
    const [taskId] = await submitAll(queue, ['once']);
    const completes: { key: string; response: TransportResponse }[] = [];
    // The complete reaches the server and is applied; its reply is lost on the way back, once.
    const lossy: Transport = async (request) => {
      const response = await fetchTransport(request);
      if (path.test(new URL(request.url).pathname)) {
        completes.push({ key: request.headers['idempotency-key']!, response });
        if (completes.length === 1) throw new TypeError('socket hang up');
      }
      return response;
    };
    let runs = 0;
    const { worker, events } = startWorker({
      client: clientWith({ transport: lossy }),
      ...queue,
      concurrency: 1,
      batching,
      handler: () => {
        runs++;
        return { value: 42 };
      },
    });

    const tasks = await waitFor('the task SUCCEEDED', () => tasksById(queue.scopeId), allInState([taskId!], 'SUCCEEDED'));
    expect(tasks.get(taskId!)).toMatchObject({ attempts: 1, outcome: { value: 42 } });
    await waitFor('the worker counted the complete', () => worker.stats.completed, (n) => n === 1);
    await worker.stop({ deadlineMs: 1_000 });

    expect(runs).toBe(1);
    expect(completes).toHaveLength(2);
    expect(completes[1]!.key).toBe(completes[0]!.key);
    expect(completes.map((c) => [c.response.status, c.response.headers['idempotent-replayed'] ?? null])).toEqual([
      [200, null],
      [200, 'true'],
    ]);
    expect(events.filter((e) => e.type === 'completed' || e.type === 'error' || e.type === 'lease_lost')).toEqual([expect.objectContaining({ type: 'completed', taskId })]);
    const messageId = (await clientWith().getTaskDebug(taskId!)).attempts[0]!.messageId;
    expect(await messageEvents(messageId, 'message.acked')).toHaveLength(1);
    expect((await clientWith().getTaskDebug(taskId!)).events.filter((e) => e.type === 'task.succeeded')).toHaveLength(1);
  });
});
