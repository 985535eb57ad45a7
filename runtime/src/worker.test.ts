import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Admitted, ApiErrorShape, BatchItemReply, CallOptions, WorkerApi } from './contract';
import { flush, ManualClock } from './testing/manual-clock';
import { createWorker, DeliveryAbortedError, nonRetryable, PermanentError, WorkerStoppedError, type HandlerContext, type WorkerEvent, type Worker, type WorkerOptions } from './worker';
import { silentLogger, type WorkerLogger } from './logger';

// ---------------------------------------------------------------------------------------------
// An in-memory mailbox of task deliveries behind WorkerApi: claims, tokens and leases as the
// server keeps them (docs/api.md, Mailboxes and messages), on the fake clock.

class FakeApiError extends Error implements ApiErrorShape {
  requestId = null;
  constructor(
    readonly code: string,
    readonly status: number,
    message = code,
  ) {
    super(message);
  }
}

interface FakeMessage {
  messageId: string;
  taskId: string;
  input: unknown;
  state: 'READY' | 'CLAIMED' | 'ACKED' | 'DEAD' | 'CANCELLED';
  attempt: number;
  token: string | null;
  leaseExpiresAtMs: number;
}

const scopeId = randomUUID();
const mailboxId = randomUUID();

class FakeMailbox {
  readonly messages: FakeMessage[] = [];
  readonly calls: { op: 'admit' | 'renew' | 'complete' | 'nack'; atMs: number; messageId?: string; body: unknown; options?: CallOptions }[] = [];
  /** Batch requests, by route, with how many items each carried. */
  readonly batches: { route: 'admit-batch' | 'complete-batch' | 'nack-batch' | 'renew-batch'; items: number; atMs: number }[] = [];
  /** While set, batch requests are applied at once but answer (or fail) only when it settles. */
  holdBatches: Promise<void> | null = null;
  /** Admit calls still waiting in their long poll. */
  openAdmits = 0;
  abortedAdmits = 0;
  /** Errors the next admits throw, in order. */
  admitFailures: Error[] = [];
  /** What renew answers instead of renewing, while set. */
  renewFailure: Error | null = null;
  /** The space's maxLeaseSeconds: longer leases are shortened to it. */
  maxLeaseSeconds = 600;
  private wakeAdmits: (() => void)[] = [];

  constructor(private readonly clock: ManualClock) {}

  submit(input: unknown): FakeMessage {
    const message: FakeMessage = { messageId: randomUUID(), taskId: randomUUID(), input, state: 'READY', attempt: 0, token: null, leaseExpiresAtMs: 0 };
    this.messages.push(message);
    for (const wake of this.wakeAdmits.splice(0)) wake();
    return message;
  }

  /** The server takes the claim away (as a task cancel does): the token answers LEASE_LOST from now on. */
  cancel(messageId: string): void {
    const message = this.find(messageId);
    message.token = null;
    message.state = 'CANCELLED';
  }

  ops(op: FakeMailbox['calls'][number]['op']): FakeMailbox['calls'] {
    return this.calls.filter((c) => c.op === op);
  }

  readonly api: WorkerApi = {
    admit: async (body, options) => {
      this.calls.push({ op: 'admit', atMs: this.clock.now(), body, options });
      const failure = this.admitFailures.shift();
      if (failure) throw failure;
      const untilMs = this.clock.now() + (body.waitMs ?? 0);
      for (;;) {
        const ready = this.messages.find((m) => m.state === 'READY');
        if (ready) return this.claim(ready, body.leaseSeconds ?? 30);
        const leftMs = untilMs - this.clock.now();
        if (leftMs <= 0) return null;
        this.openAdmits += 1;
        try {
          await this.waitForSubmit(leftMs, options?.signal);
        } catch (error) {
          this.abortedAdmits += 1;
          throw error;
        } finally {
          this.openAdmits -= 1;
        }
      }
    },
    renew: async (messageId, body, options) => {
      this.calls.push({ op: 'renew', atMs: this.clock.now(), messageId, body, options });
      if (this.renewFailure) throw this.renewFailure;
      const message = this.holding(messageId, body.token);
      message.leaseExpiresAtMs = this.clock.now() + this.grantedMs(body.leaseSeconds ?? 30);
      return { leaseExpiresAt: new Date(message.leaseExpiresAtMs).toISOString() };
    },
    complete: async (messageId, body, options) => {
      this.calls.push({ op: 'complete', atMs: this.clock.now(), messageId, body, options });
      const message = this.holding(messageId, body.token);
      message.state = 'ACKED';
      message.token = null;
      return { state: 'ACKED', resultMessageId: null };
    },
    nack: async (messageId, body, options) => {
      this.calls.push({ op: 'nack', atMs: this.clock.now(), messageId, body, options });
      const message = this.holding(messageId, body.token);
      // As the server: a nack without retry, or of the 5th attempt, makes the message DEAD.
      message.state = body.retry && message.attempt < 5 ? 'READY' : 'DEAD';
      message.token = null;
      // As the server: a delivery READY again wakes the admits waiting on the mailbox.
      if (message.state === 'READY') for (const wake of this.wakeAdmits.splice(0)) wake();
      return { state: message.state };
    },
    // The batch routes, as the server applies them: each item as its single route, in order.
    admitBatch: async (body, options) => {
      const first = await this.api.admit(body, options);
      const admitted = first === null ? [] : [first];
      for (let ready = this.readyOne(); ready && admitted.length < body.maxTasks; ready = this.readyOne()) admitted.push(this.claim(ready, body.leaseSeconds ?? 30));
      this.batches.push({ route: 'admit-batch', items: admitted.length, atMs: this.clock.now() });
      return admitted;
    },
    completeBatch: async ({ items }) => this.batch('complete-batch', items, ({ messageId, ...body }) => this.api.complete(messageId, body)),
    nackBatch: async ({ items }) => this.batch('nack-batch', items, ({ messageId, ...body }) => this.api.nack(messageId, body)),
    renewBatch: async ({ items }) => this.batch('renew-batch', items, ({ messageId, ...body }) => this.api.renew(messageId, body)),
    submitTask: unused,
    submitBatch: unused,
    getTask: unused,
    reserve: unused,
    settle: unused,
    voidReservation: unused,
    consume: unused,
    wait: unused,
    getWaiter: unused,
    arrive: unused,
    getBarrier: unused,
  };

  private readyOne(): FakeMessage | undefined {
    return this.messages.find((m) => m.state === 'READY');
  }

  private async batch<I extends { messageId: string }, T>(route: FakeMailbox['batches'][number]['route'], items: I[], single: (item: I) => Promise<T>): Promise<BatchItemReply<T>[]> {
    this.batches.push({ route, items: items.length, atMs: this.clock.now() });
    // Applied on arrival; the reply is what holdBatches delays (or fails).
    const hold = this.holdBatches;
    const replies: BatchItemReply<T>[] = [];
    for (const item of items) {
      try {
        replies.push({ messageId: item.messageId, status: 200, body: await single(item) });
      } catch (error) {
        const e = error as FakeApiError;
        replies.push({ messageId: item.messageId, status: e.status, body: { error: { code: e.code, message: e.message, requestId: 'req-fake' } } });
      }
    }
    if (hold) await hold;
    return replies;
  }

  private find(messageId: string): FakeMessage {
    const message = this.messages.find((m) => m.messageId === messageId);
    if (!message) throw new FakeApiError('NOT_FOUND', 404);
    return message;
  }

  private grantedMs(leaseSeconds: number): number {
    return Math.min(leaseSeconds, this.maxLeaseSeconds) * 1000;
  }

  /** A token works only on a live claim: after expiry, complete, nack or revoke it is LEASE_LOST. */
  private holding(messageId: string, token: string): FakeMessage {
    const message = this.find(messageId);
    if (message.state !== 'CLAIMED' || message.token !== token || this.clock.now() >= message.leaseExpiresAtMs) throw new FakeApiError('LEASE_LOST', 409);
    return message;
  }

  private claim(message: FakeMessage, leaseSeconds: number): Admitted {
    message.state = 'CLAIMED';
    message.attempt += 1;
    message.token = randomUUID();
    message.leaseExpiresAtMs = this.clock.now() + this.grantedMs(leaseSeconds);
    return {
      messageId: message.messageId,
      mailboxId,
      taskId: message.taskId,
      token: message.token,
      leaseExpiresAt: new Date(message.leaseExpiresAtMs).toISOString(),
      attempt: message.attempt,
      workKey: null,
      payload: { taskId: message.taskId, input: message.input },
      scopeId,
      claimed: { pools: [], quotas: [], budgets: [], workLimit: null },
    };
  }

  private waitForSubmit(ms: number, signal?: AbortSignal): Promise<void> {
    const gotWork = new Promise<void>((resolve) => this.wakeAdmits.push(resolve));
    const timedOut = new AbortController();
    const onAbort = (): void => timedOut.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    return Promise.race([gotWork, this.clock.sleep(ms, timedOut.signal).catch(() => signal?.throwIfAborted())]).finally(() => {
      signal?.removeEventListener('abort', onAbort);
      timedOut.abort();
      signal?.throwIfAborted();
    });
  }
}

async function unused(): Promise<never> {
  throw new Error('not used by the worker');
}

// ---------------------------------------------------------------------------------------------

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A handler whose calls the test finishes one by one. */
function controlledHandler(): { handler: WorkerOptions['handler']; calls: (HandlerContext & { finish: Deferred<unknown> })[]; running: () => number; maxRunning: () => number } {
  const calls: (HandlerContext & { finish: Deferred<unknown> })[] = [];
  let running = 0;
  let maxRunning = 0;
  return {
    calls,
    running: () => running,
    maxRunning: () => maxRunning,
    handler: async (context) => {
      const finish = deferred<unknown>();
      calls.push({ ...context, finish });
      running += 1;
      maxRunning = Math.max(maxRunning, running);
      try {
        return await finish.promise;
      } finally {
        running -= 1;
      }
    },
  };
}

function setup(overrides: Partial<WorkerOptions> = {}) {
  const clock = new ManualClock();
  const box = new FakeMailbox(clock);
  const events: WorkerEvent[] = [];
  const worker = createWorker({
    client: box.api,
    mailboxId,
    scopeId,
    holder: 'worker-test',
    concurrency: 1,
    leaseSeconds: 30,
    clock,
    random: { next: () => 0 },
    onEvent: (event) => events.push(event),
    logger: silentLogger,
    handler: async ({ delivery }) => String(delivery.input).toUpperCase(),
    ...overrides,
  });
  return { clock, box, events, worker };
}

/** Stop with no grace: the drain deadline is a timer on the fake clock, so the clock must move for it. */
async function stopNow(clock: ManualClock, worker: Worker): Promise<void> {
  const stopping = worker.stop({ deadlineMs: 0 });
  await clock.advance(0);
  await stopping;
}

const types = (events: WorkerEvent[]): string[] => events.map((e) => e.type);

describe('worker', () => {
  it('admits with a long poll, runs the handler and completes with its result', async () => {
    const { clock, box, events, worker } = setup();
    worker.start();
    await clock.advance(0);
    expect(box.ops('admit')[0]!.body).toMatchObject({ scopeId, mailboxId, holder: 'worker-test', holderSession: worker.holderSession, leaseSeconds: 30, waitMs: 20_000 });

    const message = box.submit('hello');
    await clock.advance(0);

    const [complete] = box.ops('complete');
    expect(complete).toMatchObject({ messageId: message.messageId, body: { token: expect.any(String), result: { payload: 'HELLO' } } });
    expect(message.state).toBe('ACKED');
    expect(worker.stats).toEqual({ admitted: 1, completed: 1, failed: 0, leaseLost: 0, inFlight: 0 });
    expect(types(events)).toEqual(['admitted', 'completed']);
    expect(events[0]).toMatchObject({ delivery: { messageId: message.messageId, taskId: message.taskId, attempt: 1, input: 'hello', payload: { taskId: message.taskId, input: 'hello' } } });
    await stopNow(clock, worker);
  });

  it('completes without a result when the handler returns nothing', async () => {
    const { clock, box, worker } = setup({ handler: async () => undefined });
    worker.start();
    box.submit('x');
    await clock.advance(0);
    expect(box.ops('complete')[0]!.body).toEqual({ token: expect.any(String) });
    await stopNow(clock, worker);
  });

  it('each worker instance has its own holderSession', () => {
    expect(setup().worker.holderSession).not.toBe(setup().worker.holderSession);
  });

  it('nacks with retry when the handler throws', async () => {
    const failure = new Error('upstream 503');
    const { clock, box, events, worker } = setup({ handler: async () => Promise.reject(failure) });
    worker.start();
    const message = box.submit('x');
    await clock.advance(0);
    expect(box.ops('nack')[0]).toMatchObject({ messageId: message.messageId, body: { retry: true } });
    expect(box.ops('complete')).toHaveLength(0);
    expect(events.find((e) => e.type === 'failed')).toMatchObject({ retry: true, reason: 'handler', error: failure });
    // Redelivered until the server's 5th attempt makes it DEAD.
    expect(box.ops('nack').map((c) => (c.body as { retry: boolean }).retry)).toEqual([true, true, true, true, true]);
    expect(message.state).toBe('DEAD');
    expect(worker.stats.failed).toBe(5);
    await stopNow(clock, worker);
  });

  it('nacks without retry on PermanentError or an error marked nonRetryable', async () => {
    const errors = [new PermanentError('bad input'), nonRetryable(new TypeError('cannot parse'))];
    const { clock, box, worker } = setup({ handler: async () => Promise.reject(errors.shift()) });
    worker.start();
    box.submit('a');
    box.submit('b');
    await clock.advance(emptyPause);
    expect(box.ops('nack').map((c) => c.body)).toEqual([
      { token: expect.any(String), retry: false },
      { token: expect.any(String), retry: false },
    ]);
    expect(box.messages.map((m) => m.state)).toEqual(['DEAD', 'DEAD']);
    await stopNow(clock, worker);
  });

  it('renews a third of the way into the lease, as the reply gives it', async () => {
    const { clock, box, events, worker } = setup({ handler: controlledHandler().handler });
    worker.start();
    await clock.advance(0);
    const startMs = clock.now();
    box.submit('long job');
    await clock.advance(65_000);
    expect(box.ops('renew').map((c) => c.atMs - startMs)).toEqual([10_000, 20_000, 30_000, 40_000, 50_000, 60_000]);
    expect(box.ops('renew')[0]!.body).toMatchObject({ leaseSeconds: 30 });
    expect(events.filter((e) => e.type === 'renewed')).toHaveLength(6);
    expect(worker.stats.leaseLost).toBe(0);
    await stopNow(clock, worker);
  });

  it('renews a lease the server shortened at a third of what it granted', async () => {
    const { clock, box, worker } = setup({ handler: controlledHandler().handler });
    box.maxLeaseSeconds = 15;
    worker.start();
    await clock.advance(0);
    const startMs = clock.now();
    box.submit('x');
    await clock.advance(16_000);
    expect(box.ops('renew').map((c) => c.atMs - startMs)).toEqual([5_000, 10_000, 15_000]);
    await stopNow(clock, worker);
  });

  it('aborts the handler and sends nothing more when renew answers LEASE_LOST', async () => {
    const control = controlledHandler();
    const { clock, box, events, worker } = setup({ handler: control.handler });
    worker.start();
    const message = box.submit('x');
    await clock.advance(1_000);
    const [call] = control.calls;
    expect(call!.signal.aborted).toBe(false);

    box.cancel(message.messageId); // the task was cancelled
    await clock.advance(10_000);
    expect(call!.signal.aborted).toBe(true);
    expect(call!.signal.reason).toBeInstanceOf(DeliveryAbortedError);
    expect(events.find((e) => e.type === 'lease_lost')).toMatchObject({ messageId: message.messageId, cause: 'LEASE_LOST' });

    call!.finish.resolve('too late'); // a handler that finishes anyway
    await clock.advance(20_000);
    expect(box.ops('complete')).toHaveLength(0);
    expect(box.ops('nack')).toHaveLength(0);
    expect(box.ops('renew')).toHaveLength(1);
    expect(worker.stats).toMatchObject({ leaseLost: 1, completed: 0, failed: 0, inFlight: 0 });
    await stopNow(clock, worker);
  });

  it('treats the lease as lost when it runs out before a renew succeeds', async () => {
    const control = controlledHandler();
    const { clock, box, events, worker } = setup({ handler: control.handler });
    worker.start();
    box.submit('x');
    await clock.advance(0);
    box.renewFailure = new FakeApiError('NETWORK', 0, 'connection reset');
    await clock.advance(29_999);
    expect(control.calls[0]!.signal.aborted).toBe(false);
    expect(box.ops('renew').length).toBeGreaterThan(1); // retried before the deadline
    await clock.advance(1);
    expect(control.calls[0]!.signal.aborted).toBe(true);
    expect(events.find((e) => e.type === 'lease_lost')).toMatchObject({ cause: 'EXPIRED' });

    control.calls[0]!.finish.reject(new Error('aborted'));
    await clock.advance(1_000);
    expect(box.ops('nack')).toHaveLength(0);
    expect(box.ops('complete')).toHaveLength(0);
    await stopNow(clock, worker);
  });

  it('runs at most `concurrency` handlers and admits only when a slot is free (single routes)', async () => {
    const control = controlledHandler();
    const { clock, box, worker } = setup({ handler: control.handler, concurrency: 2, batching: false });
    for (let i = 0; i < 5; i += 1) box.submit(i);
    worker.start();
    await clock.advance(1_000);
    expect(control.running()).toBe(2);
    expect(box.ops('admit')).toHaveLength(2); // no admit while both slots are busy

    control.calls[0]!.finish.resolve('done');
    await clock.advance(0);
    expect(control.running()).toBe(2);
    expect(box.ops('admit')).toHaveLength(3);

    for (const call of control.calls) call.finish.resolve('done');
    await clock.advance(0);
    for (const call of control.calls) call.finish.resolve('done');
    await clock.advance(0);
    expect(box.ops('complete')).toHaveLength(5);
    expect(control.maxRunning()).toBe(2);
    expect(worker.stats).toMatchObject({ admitted: 5, completed: 5, inFlight: 0 });
    await stopNow(clock, worker);
  });

  it('drains: stops admitting, aborts the long poll, waits for handlers up to the deadline, nacks the rest', async () => {
    const control = controlledHandler();
    const { clock, box, events, worker } = setup({ handler: control.handler, concurrency: 3 });
    box.submit('quick');
    box.submit('stuck');
    worker.start();
    await clock.advance(0);
    expect(control.calls).toHaveLength(2);
    expect(box.openAdmits).toBe(1); // the third slot long-polls

    let stopped = false;
    const stopping = worker.stop({ deadlineMs: 5_000 }).then(() => (stopped = true));
    await clock.advance(0);
    expect(box.abortedAdmits).toBe(1);
    expect(box.openAdmits).toBe(0);

    box.submit('late'); // not admitted any more
    await clock.advance(1_000);
    control.calls[0]!.finish.resolve('QUICK');
    await clock.advance(3_000);
    expect(stopped).toBe(false);
    expect(box.ops('complete')).toHaveLength(1);

    await clock.advance(1_000); // the deadline
    await stopping;
    expect(control.calls[1]!.signal.aborted).toBe(true);
    expect((control.calls[1]!.signal.reason as DeliveryAbortedError).why).toBe('drain');
    expect(box.ops('nack').map((c) => c.body)).toEqual([{ token: expect.any(String), retry: true }]);
    expect(box.messages.map((m) => m.state)).toEqual(['ACKED', 'READY', 'READY']);
    // One admit-batch took both, the next one long-polled until the stop aborted it.
    expect(box.batches.filter((b) => b.route === 'admit-batch').map((b) => b.items)).toEqual([2]);
    expect(box.ops('admit')).toHaveLength(2);
    expect(events.at(-1)).toEqual({ type: 'stopped' });
    await worker.done;

    control.calls[1]!.finish.resolve('STUCK'); // finishing after the drain sends nothing
    await clock.advance(1_000);
    expect(box.ops('complete')).toHaveLength(1);
  });

  it('stop returns as soon as in-flight handlers finish, before the deadline', async () => {
    const control = controlledHandler();
    const { clock, box, worker } = setup({ handler: control.handler });
    box.submit('x');
    worker.start();
    await clock.advance(0);
    const stopping = worker.stop({ deadlineMs: 60_000 });
    await clock.advance(2_000);
    control.calls[0]!.finish.resolve('X');
    await clock.advance(0);
    await stopping;
    expect(box.ops('complete')).toHaveLength(1);
    expect(box.ops('nack')).toHaveLength(0);
  });

  it('backs off after admit errors and carries on, keeping the claim key while a claim may have happened', async () => {
    const { clock, box, events, worker } = setup({ admitBackoff: { baseMs: 500, maxMs: 30_000 } });
    box.admitFailures = [new FakeApiError('NETWORK', 0), new FakeApiError('NETWORK', 0), new FakeApiError('INTERNAL', 500), new FakeApiError('RATE_LIMITED', 429)];
    box.submit('x');
    worker.start();
    await clock.advance(0);
    expect(box.ops('admit')).toHaveLength(1);

    await clock.advance(60_000);
    const admits = box.ops('admit').slice(0, 5);
    // random 0: half of each ceiling, doubling from 500 ms
    expect(events.filter((e) => e.type === 'error').map((e) => (e as { retryInMs: number }).retryInMs)).toEqual([250, 500, 1_000, 2_000]);
    expect(admits.map((c, i) => c.atMs - admits[0]!.atMs - [0, 250, 750, 1_750, 3_750][i]!)).toEqual([0, 0, 0, 0, 0]);
    const keys = admits.map((c) => c.options?.idempotencyKey);
    expect(new Set(keys.slice(0, 4)).size).toBe(1); // NETWORK and 5xx: the claim may exist, ask again with its key
    expect(keys[4]).not.toBe(keys[3]); // a 429 claimed nothing
    expect(box.ops('complete')).toHaveLength(1);
    await stopNow(clock, worker);
  });

  it('uses a new claim key after each delivery', async () => {
    const { clock, box, worker } = setup();
    box.submit('a');
    box.submit('b');
    worker.start();
    await clock.advance(0);
    const keys = box.ops('admit').map((c) => c.options?.idempotencyKey);
    expect(keys.length).toBeGreaterThanOrEqual(3);
    expect(new Set(keys).size).toBe(keys.length);
    await stopNow(clock, worker);
  });

  it('survives a listener that throws', async () => {
    const { clock, box, worker } = setup({
      onEvent: () => {
        throw new Error('listener bug');
      },
    });
    box.submit('x');
    worker.start();
    await clock.advance(0);
    expect(worker.stats.completed).toBe(1);
    await stopNow(clock, worker);
  });

  it('drains on SIGTERM once the hook is installed', async () => {
    const { clock, worker } = setup();
    worker.start();
    const uninstall = worker.installSignalHandlers({ deadlineMs: 0, signals: ['SIGUSR2'] });
    process.emit('SIGUSR2', 'SIGUSR2');
    await clock.advance(0);
    await worker.done;
    uninstall();
    expect(process.listenerCount('SIGUSR2')).toBe(0);
  });
});

/** Between two deliveries of a busy mailbox no pause applies, but the test advances a little to be safe. */
const emptyPause = 1_000;

describe('worker with batching (the default)', () => {
  it('admits up to its free slots in one admit-batch, and one more when a slot frees', async () => {
    const control = controlledHandler();
    const { clock, box, worker } = setup({ handler: control.handler, concurrency: 3 });
    for (let i = 0; i < 5; i += 1) box.submit(i);
    worker.start();
    await clock.advance(0);
    expect(control.running()).toBe(3);
    expect(box.batches.filter((b) => b.route === 'admit-batch').map((b) => b.items)).toEqual([3]);
    expect((box.ops('admit')[0]!.body as { maxTasks: number }).maxTasks).toBe(3);

    control.calls[0]!.finish.resolve('done');
    await clock.advance(0);
    expect(control.running()).toBe(3);
    expect((box.ops('admit')[1]!.body as { maxTasks: number }).maxTasks).toBe(1);
    expect(control.maxRunning()).toBe(3);
    for (const call of control.calls) call.finish.resolve('done');
    await clock.advance(0);
    for (const call of control.calls) call.finish.resolve('done');
    await clock.advance(0);
    expect(worker.stats).toMatchObject({ admitted: 5, completed: 5, inFlight: 0 });
    await stopNow(clock, worker);
  });

  it('handlers that finish together complete in one complete-batch, counted done only once it answered', async () => {
    const control = controlledHandler();
    const { clock, box, events, worker } = setup({ handler: control.handler, concurrency: 4 });
    for (let i = 0; i < 4; i += 1) box.submit(i);
    worker.start();
    await clock.advance(0);
    let answer!: () => void;
    box.holdBatches = new Promise<void>((resolve) => (answer = resolve));
    for (const call of control.calls) call.finish.resolve('done');
    await clock.advance(0);
    expect(box.batches.filter((b) => b.route === 'complete-batch').map((b) => b.items)).toEqual([4]);
    // Sent but not answered: nothing is reported done yet.
    expect(worker.stats.completed).toBe(0);
    expect(events.filter((e) => e.type === 'completed')).toHaveLength(0);
    box.holdBatches = null;
    answer();
    await clock.advance(0);
    expect(worker.stats.completed).toBe(4);
    expect(box.messages.map((m) => m.state)).toEqual(['ACKED', 'ACKED', 'ACKED', 'ACKED']);
    await stopNow(clock, worker);
  });

  it('a complete-batch that fails whole reports an error for each of its items and counts none done', async () => {
    const control = controlledHandler();
    const { clock, box, events, worker } = setup({ handler: control.handler, concurrency: 2 });
    box.submit('a');
    box.submit('b');
    worker.start();
    await clock.advance(0);
    box.holdBatches = Promise.reject(new FakeApiError('NETWORK', 0));
    box.holdBatches.catch(() => undefined);
    for (const call of control.calls) call.finish.resolve('done');
    await clock.advance(0);
    expect(events.filter((e) => e.type === 'error').map((e) => (e as { stage: string }).stage)).toEqual(['complete', 'complete']);
    expect(worker.stats.completed).toBe(0);
    box.holdBatches = null;
    await stopNow(clock, worker);
  });

  it('an item the batch answers LEASE_LOST loses its lease alone; its neighbours complete', async () => {
    const control = controlledHandler();
    const { clock, box, events, worker } = setup({ handler: control.handler, concurrency: 2 });
    const [a] = [box.submit('a'), box.submit('b')];
    worker.start();
    await clock.advance(0);
    box.cancel(a.messageId);
    for (const call of control.calls) call.finish.resolve('done');
    await clock.advance(0);
    expect(box.batches.filter((b) => b.route === 'complete-batch').map((b) => b.items)).toEqual([2]);
    expect(events.filter((e) => e.type === 'lease_lost')).toMatchObject([{ messageId: a.messageId, cause: 'LEASE_LOST' }]);
    expect(worker.stats).toMatchObject({ completed: 1, leaseLost: 1 });
    await stopNow(clock, worker);
  });

  it('a complete that waited for a request past its lease is withdrawn: reported lost (EXPIRED), never sent', async () => {
    const control = controlledHandler();
    const { clock, box, events, worker } = setup({ handler: control.handler, concurrency: 2, leaseSeconds: 30, batching: { maxInFlight: 1 } });
    const [a, b] = [box.submit('a'), box.submit('b')];
    worker.start();
    await clock.advance(0);
    // a's complete goes out and its request hangs; b's handler finishes meanwhile and waits.
    let answer!: () => void;
    box.holdBatches = new Promise<void>((resolve) => (answer = resolve));
    control.calls[0]!.finish.resolve('A');
    await clock.advance(0);
    box.renewFailure = new FakeApiError('NETWORK', 0); // b's lease is not extended
    control.calls[1]!.finish.resolve('B');
    await clock.advance(31_000); // past b's lease while a's request still hangs
    box.holdBatches = null;
    answer();
    await clock.advance(0);
    expect(box.ops('complete').map((c) => c.messageId)).toEqual([a.messageId]);
    expect(events.filter((e) => e.type === 'lease_lost')).toMatchObject([{ messageId: b.messageId, cause: 'EXPIRED' }]);
    expect(worker.stats).toMatchObject({ completed: 1, leaseLost: 1 });
    box.renewFailure = null;
    await stopNow(clock, worker);
  });

  it('renewals due together leave in one renew-batch', async () => {
    const control = controlledHandler();
    const { clock, box, worker } = setup({ handler: control.handler, concurrency: 3 });
    for (let i = 0; i < 3; i += 1) box.submit(i);
    worker.start();
    await clock.advance(0);
    await clock.advance(10_000);
    expect(box.batches.filter((b) => b.route === 'renew-batch').map((b) => b.items)).toEqual([3]);
    expect(box.ops('renew')).toHaveLength(3);
    for (const call of control.calls) call.finish.resolve('done');
    await clock.advance(0);
    await stopNow(clock, worker);
  });
});

/** A logger that keeps what it was told: level, message and fields. */
function recordingLogger(): WorkerLogger & { lines: { level: string; message: string; fields: Record<string, unknown> }[] } {
  const lines: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  const at = (level: string) => (fields: Record<string, unknown>, message: string) => void lines.push({ level, message, fields });
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}

describe('worker logging and fatal admit errors', () => {
  it('logs start, each failure with its code, the admit backoff, a lost lease and the drain', async () => {
    const logger = recordingLogger();
    const control = controlledHandler();
    const { clock, box, worker } = setup({ logger, handler: control.handler, admitBackoff: { baseMs: 500, maxMs: 30_000 } });
    box.admitFailures = [new FakeApiError('INTERNAL', 500)];
    worker.start();
    expect(logger.lines[0]).toMatchObject({ level: 'info', message: 'worker started', fields: { holder: 'worker-test', mailboxId, scopeId, concurrency: 1 } });
    await clock.advance(0);
    expect(logger.lines[1]).toMatchObject({ level: 'warn', message: 'admit failed; backing off', fields: { code: 'INTERNAL', status: 500, retryInMs: 250 } });

    const first = box.submit('a');
    await clock.advance(1_000);
    control.calls[0]!.finish.reject(new TypeError('input.text is undefined'));
    await clock.advance(0);
    expect(logger.lines.find((l) => l.fields.messageId === first.messageId)).toMatchObject({ level: 'warn', message: 'task failed; it will be retried', fields: { code: 'TypeError', error: 'input.text is undefined', retry: true } });

    await clock.advance(1_000);
    const second = control.calls[1]!;
    box.cancel(first.messageId); // the retried task is cancelled while its second attempt runs
    await clock.advance(20_000);
    expect(second.signal.aborted).toBe(true);
    expect(logger.lines.find((l) => l.message.startsWith('lease lost'))).toMatchObject({ level: 'warn', fields: { cause: 'LEASE_LOST' } });

    await stopNow(clock, worker);
    const messages = logger.lines.map((l) => l.message);
    expect(messages.some((m) => m.startsWith('draining'))).toBe(true);
    expect(messages.at(-1)).toBe('worker stopped');
  });

  it.each([
    [400, 'VALIDATION_FAILED', 'BATON_SCOPE'],
    [401, 'UNAUTHENTICATED', 'BATON_KEY'],
    [403, 'FORBIDDEN', 'coordination_write'],
    [404, 'NOT_FOUND', 'mailboxId'],
  ])('an admit answered %i %s stops the worker: done and stop() reject with a WorkerStoppedError naming what to check', async (status, code, hint) => {
    const logger = recordingLogger();
    const { clock, box, events, worker } = setup({ logger });
    box.admitFailures = [new FakeApiError(code, status, `the server says ${code}`)];
    // Awaited from the start: a rejection of done that nobody handles ends the process, on purpose.
    const stopped = worker.done.then(() => null, (e: unknown) => e);
    worker.start();
    await clock.advance(0);
    const error = await stopped;
    expect(error).toBeInstanceOf(WorkerStoppedError);
    expect((error as WorkerStoppedError).message).toContain(`${status} ${code}`);
    expect((error as WorkerStoppedError).message).toContain(hint);
    expect((error as WorkerStoppedError).cause).toMatchObject({ code, status });
    await expect(worker.stop()).rejects.toBe(error);
    // One admit, no retry; the error is logged at error level, and the stop too.
    expect(box.ops('admit')).toHaveLength(1);
    expect(logger.lines.find((l) => l.level === 'error')).toMatchObject({ message: (error as Error).message, fields: { code, status } });
    expect(types(events).at(-1)).toBe('stopped');
  });
});
