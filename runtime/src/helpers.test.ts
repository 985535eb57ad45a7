import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { schemas } from '@baton/core';
import type { CallOptions, Out, WorkerApi } from './contract';
import { acquireQuota, arriveAndWait, submitAndAwait, submitMany, WaitEndedError, WaitTimeoutError, withReservation } from './helpers';
import type { RuntimeClock } from './clock';

type Reservation = Out<typeof schemas.reservationView>;
type Waiter = Out<typeof schemas.waiterView>;
type Barrier = Out<typeof schemas.barrierView>;
type Task = Out<typeof schemas.taskView>;

/** A clock whose sleeps pass at once and move time by what they slept: enough for poll loops. */
function steppingClock(): RuntimeClock & { sleeps: number[] } {
  let t = Date.parse('2026-01-01T00:00:00.000Z');
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => t,
    sleep: async (ms, signal) => {
      signal?.throwIfAborted();
      sleeps.push(ms);
      t += ms;
    },
  };
}

interface Call {
  op: string;
  args: unknown[];
}

/** WorkerApi with only the given methods; every call is recorded, anything else throws. */
function fakeApi(methods: Partial<WorkerApi>): { api: WorkerApi; calls: Call[] } {
  const calls: Call[] = [];
  const api = new Proxy({} as WorkerApi, {
    get: (_target, op: string) => {
      const method = (methods as Record<string, (...args: unknown[]) => unknown>)[op];
      return async (...args: unknown[]) => {
        calls.push({ op, args });
        if (!method) throw new Error(`${op} is not faked`);
        return method(...args);
      };
    },
  });
  return { api, calls };
}

const at = '2026-01-01T00:00:00.000Z';
const scopeId = randomUUID();
const budgetId = randomUUID();

function reservation(overrides: Partial<Reservation> = {}): Reservation {
  return { id: randomUUID(), budgetId, scopeId, holder: 'h', amountMinor: '500', settledMinor: '0', remainingMinor: '500', state: 'ACTIVE', settleBy: null, createdAt: at, updatedAt: at, ...overrides };
}

/** A budget whose settle and void move the one reservation as the server would (docs/design/0007-budget-reservations.md). */
function budgetApi() {
  let current = reservation();
  const entry = (kind: 'SETTLE' | 'VOID', amountMinor: string, workKey: string) => ({
    entry: { id: randomUUID(), kind, reservationId: current.id, amountMinor, workKey, createdAt: at },
    replay: false,
    reservation: current,
    budget: {} as never,
  });
  return fakeApi({
    reserve: async () => current,
    settle: async (_id, body) => {
      const settled = BigInt(current.settledMinor) + BigInt(body.amountMinor);
      const remaining = BigInt(current.amountMinor) - settled;
      current = { ...current, settledMinor: settled.toString(), remainingMinor: (remaining > 0n ? remaining : 0n).toString(), state: remaining > 0n ? 'ACTIVE' : 'SETTLED' };
      return entry('SETTLE', body.amountMinor, body.workKey);
    },
    voidReservation: async (_id, body) => {
      const released = current.remainingMinor;
      current = { ...current, remainingMinor: '0', state: 'VOIDED' };
      return entry('VOID', released, body.workKey);
    },
  });
}

const request = { scopeId, holder: 'worker-1', amountMinor: '500', workKey: 'run-7:call-3' };

describe('withReservation', () => {
  it('settles what the work spent and voids the rest, with workKeys derived from the operation key', async () => {
    const { api, calls } = budgetApi();
    const outcome = await withReservation(api, budgetId, request, async () => '184');
    expect(calls.map((c) => c.op)).toEqual(['reserve', 'settle', 'voidReservation']);
    expect(calls[1]!.args[1]).toMatchObject({ amountMinor: '184', workKey: 'run-7:call-3:settle' });
    expect(calls[2]!.args[1]).toMatchObject({ workKey: 'run-7:call-3:void' });
    expect((calls[0]!.args[2] as CallOptions).idempotencyKey).toBe(`reserve:${budgetId}:run-7:call-3`);
    expect((calls[1]!.args[2] as CallOptions).idempotencyKey).toBe(`settle:${budgetId}:run-7:call-3:settle`);
    expect(outcome).toMatchObject({ spentMinor: '184', reservation: { state: 'VOIDED', settledMinor: '184' } });
  });

  it('settles the full amount when the work returns nothing, and voids nothing', async () => {
    const { api, calls } = budgetApi();
    const outcome = await withReservation(api, budgetId, request, async () => undefined);
    expect(calls.map((c) => c.op)).toEqual(['reserve', 'settle']);
    expect(calls[1]!.args[1]).toMatchObject({ amountMinor: '500' });
    expect(outcome.reservation.state).toBe('SETTLED');
  });

  it('voids when the work spent nothing', async () => {
    const { api, calls } = budgetApi();
    await withReservation(api, budgetId, request, async () => 0n);
    expect(calls.map((c) => c.op)).toEqual(['reserve', 'voidReservation']);
  });

  it('voids and rethrows when the work fails', async () => {
    const { api, calls } = budgetApi();
    const failure = new Error('model timed out');
    await expect(withReservation(api, budgetId, request, async () => Promise.reject(failure))).rejects.toBe(failure);
    expect(calls.map((c) => c.op)).toEqual(['reserve', 'voidReservation']);
    expect(calls[1]!.args[1]).toMatchObject({ workKey: 'run-7:call-3:void' });
  });

  it('uses the same keys when the whole operation is retried', async () => {
    const first = budgetApi();
    const second = budgetApi();
    await withReservation(first.api, budgetId, request, async () => '100');
    await withReservation(second.api, budgetId, request, async () => '100');
    const keysOf = (calls: Call[]) => calls.map((c) => [(c.args[1] as { workKey?: string }).workKey, (c.args[2] as CallOptions).idempotencyKey]);
    expect(keysOf(second.calls)).toEqual(keysOf(first.calls));
  });

  it('refuses a spend that is not minor units', async () => {
    const { api } = budgetApi();
    await expect(withReservation(api, budgetId, request, async () => '1.50')).rejects.toThrow(RangeError);
  });
});

function waiter(state: Waiter['state']): Waiter {
  return { id: randomUUID(), allowanceId: randomUUID(), scopeId, holder: 'h', units: 3, state, grantedAt: state === 'GRANTED' ? at : null, expiresAt: at, createdAt: at, updatedAt: at };
}

describe('acquireQuota', () => {
  it('joins the line and long-polls the waiter until it is granted', async () => {
    const polls: Waiter['state'][] = ['WAITING', 'GRANTED'];
    const { api, calls } = fakeApi({ wait: async () => waiter('WAITING'), getWaiter: async () => waiter(polls.shift()!) });
    const granted = await acquireQuota(api, 'allowance-1', { scopeId, units: 3, holder: 'h', ttlSeconds: 60 }, { pollWaitMs: 15_000 });
    expect(granted.state).toBe('GRANTED');
    expect(calls.map((c) => c.op)).toEqual(['wait', 'getWaiter', 'getWaiter']);
    expect(calls[0]!.args[1]).toEqual({ scopeId, units: 3, holder: 'h', ttlSeconds: 60 });
    expect(calls[1]!.args[1]).toBe(15_000);
  });

  it('returns at once on the fast path', async () => {
    const { api, calls } = fakeApi({ wait: async () => waiter('GRANTED') });
    await acquireQuota(api, 'allowance-1', { scopeId, units: 1, holder: 'h' });
    expect(calls.map((c) => c.op)).toEqual(['wait']);
  });

  it.each(['EXPIRED', 'CANCELLED'] as const)('throws when the waiter ends %s', async (state) => {
    const { api } = fakeApi({ wait: async () => waiter('WAITING'), getWaiter: async () => waiter(state) });
    await expect(acquireQuota(api, 'allowance-1', { scopeId, units: 1, holder: 'h' })).rejects.toMatchObject({ name: 'WaitEndedError', state });
  });
});

function barrier(state: Barrier['state'], epoch = 1): Barrier {
  return { id: 'b', scopeId, state, epoch, target: 2, arrivals: state === 'RELEASED' ? 2 : 1, releasedAt: state === 'RELEASED' ? at : null, createdAt: at, updatedAt: at };
}

describe('arriveAndWait', () => {
  it('arrives, then long-polls until released', async () => {
    const polls = [barrier('WAITING'), barrier('RELEASED')];
    const { api, calls } = fakeApi({ arrive: async () => ({ ...barrier('WAITING'), replay: false }), getBarrier: async () => polls.shift()! });
    const released = await arriveAndWait(api, 'b', 'agent-3', { timeoutMs: 60_000, clock: steppingClock() });
    expect(released.state).toBe('RELEASED');
    expect(calls[0]!.args[1]).toEqual({ arrivalKey: 'agent-3' });
    expect(calls.slice(1).map((c) => c.args[1])).toEqual([30_000, 30_000]); // the server's cap
  });

  it('counts an epoch that already ended as released', async () => {
    const { api } = fakeApi({ arrive: async () => ({ ...barrier('WAITING', 4), replay: true }), getBarrier: async () => barrier('WAITING', 5) });
    expect((await arriveAndWait(api, 'b', 'k', { timeoutMs: 1_000, clock: steppingClock() })).epoch).toBe(5);
  });

  it('throws when the barrier is cancelled', async () => {
    const { api } = fakeApi({ arrive: async () => ({ ...barrier('CANCELLED'), replay: false }) });
    await expect(arriveAndWait(api, 'b', 'k', { timeoutMs: 1_000 })).rejects.toBeInstanceOf(WaitEndedError);
  });

  it('times out after timeoutMs', async () => {
    const clock = steppingClock();
    const { api, calls } = fakeApi({
      arrive: async () => ({ ...barrier('WAITING'), replay: false }),
      // A long poll that holds for as long as it is asked to.
      getBarrier: async (_id, waitMs) => {
        await clock.sleep(waitMs ?? 0);
        return barrier('WAITING');
      },
    });
    await expect(arriveAndWait(api, 'b', 'k', { timeoutMs: 45_000, clock })).rejects.toBeInstanceOf(WaitTimeoutError);
    expect(calls.slice(1).map((c) => c.args[1])).toEqual([30_000, 15_000]);
  });
});

function task(state: Task['state'], outcome: unknown = null): Task {
  return {
    id: 't',
    taskKey: 'k',
    fingerprint: 'f',
    mailboxId: randomUUID(),
    scopeId,
    state,
    input: 'x',
    requirements: { pools: [], quotas: [], budgets: [] },
    workLimit: null,
    deadline: null,
    attempts: 1,
    outcome,
    failureReason: state === 'FAILED' ? 'NACKED' : null,
    tombstoned: false,
    subscribers: [],
    createdAt: at,
    updatedAt: at,
  };
}

describe('submitAndAwait', () => {
  const body = { scopeId, mailboxId: randomUUID(), taskKey: 'doc-7', input: 'hello' };

  it('waits on the server (getTask with waitMs, the rest of timeoutMs up to 30 s) and asks again at once after a held reply', async () => {
    const clock = steppingClock();
    const states: Task[] = [task('RUNNING'), task('RUNNING'), task('SUCCEEDED', 'HELLO')];
    const waits: (number | undefined)[] = [];
    const { api } = fakeApi({
      submitTask: async () => ({ taskId: 't', state: 'PENDING', created: true }),
      // A server that holds each wait in full: the clock moves by the wait, as on a live server.
      getTask: async (_id, o) => {
        waits.push(o?.waitMs);
        await clock.sleep(o?.waitMs ?? 0);
        return states.shift()!;
      },
    });
    const done = await submitAndAwait(api, body, { timeoutMs: 70_000, clock });
    expect(done).toMatchObject({ state: 'SUCCEEDED', outcome: 'HELLO' });
    expect(waits).toEqual([30_000, 30_000, 10_000]);
    // No pause of its own between held replies: only the server's waits.
    expect(clock.sleeps).toEqual([30_000, 30_000, 10_000]);
  });

  it('pauses pollMs after a reply that came back unfinished before its wait ran out (a draining or older server)', async () => {
    const clock = steppingClock();
    const states: Task[] = [task('PENDING'), task('RUNNING'), task('SUCCEEDED', 'HELLO')];
    const { api, calls } = fakeApi({ submitTask: async () => ({ taskId: 't', state: 'PENDING', created: true }), getTask: async () => states.shift()! });
    const done = await submitAndAwait(api, body, { timeoutMs: 10_000, pollMs: 250, clock });
    expect(done).toMatchObject({ state: 'SUCCEEDED', outcome: 'HELLO' });
    expect(calls[0]).toMatchObject({ op: 'submitTask', args: [body, {}] });
    expect(clock.sleeps).toEqual([250, 250]);
  });

  it('returns FAILED tasks too: the caller reads failureReason', async () => {
    const { api } = fakeApi({ submitTask: async () => ({ taskId: 't', state: 'PENDING', created: false }), getTask: async () => task('FAILED') });
    expect(await submitAndAwait(api, body, { clock: steppingClock() })).toMatchObject({ state: 'FAILED', failureReason: 'NACKED' });
  });

  it('times out, leaving the task to run on', async () => {
    const clock = steppingClock();
    const { api } = fakeApi({ submitTask: async () => ({ taskId: 't', state: 'PENDING', created: true }), getTask: async () => task('RUNNING') });
    await expect(submitAndAwait(api, body, { timeoutMs: 1_000, pollMs: 300, clock })).rejects.toBeInstanceOf(WaitTimeoutError);
    expect(clock.sleeps).toEqual([300, 300, 300, 100]);
  });
});

describe('submitMany', () => {
  const task = (n: number) => ({ scopeId, mailboxId: randomUUID(), taskKey: `t-${n}` });

  it('submits in batches of batchSize, in order, and answers one result per task', async () => {
    const { api, calls } = fakeApi({
      submitBatch: async (body) =>
        body.tasks.map((t) =>
          t.taskKey === 't-3'
            ? { status: 409, body: { error: { code: 'TASK_KEY_CONFLICT', message: 'another fingerprint', requestId: 'r' } } }
            : { status: t.taskKey === 't-1' ? 200 : 201, body: { taskId: `id-${t.taskKey}`, state: 'PENDING' as const, created: t.taskKey !== 't-1' } },
        ),
    });
    const results = await submitMany(api, [0, 1, 2, 3, 4].map(task), { batchSize: 2 });
    expect(calls.map((c) => (c.args[0] as { tasks: { taskKey: string }[] }).tasks.map((t) => t.taskKey))).toEqual([['t-0', 't-1'], ['t-2', 't-3'], ['t-4']]);
    expect(results.map((r) => (r.ok ? [r.created, r.reply.taskId] : [r.error.code, r.error.status]))).toEqual([
      [true, 'id-t-0'],
      [false, 'id-t-1'],
      [true, 'id-t-2'],
      ['TASK_KEY_CONFLICT', 409],
      [true, 'id-t-4'],
    ]);
  });

  it('submits BACKLOG_FULL tasks again once there is room, backing off 250 ms doubling, and answers them as stored', async () => {
    let room = 2;
    const { api, calls } = fakeApi({
      submitBatch: async (body) =>
        body.tasks.map((t) =>
          room-- > 0
            ? { status: 201, body: { taskId: `id-${t.taskKey}`, state: 'PENDING' as const, created: true } }
            : { status: 429, body: { error: { code: 'BACKLOG_FULL', message: 'mailbox full', requestId: 'r' } } },
        ),
    });
    // Workers make room for one more task during each pause.
    const stepping = steppingClock();
    const clock = { ...stepping, sleep: async (ms: number) => { room = Math.max(room, 0) + 1; await stepping.sleep(ms); } };
    const results = await submitMany(api, [0, 1, 2, 3, 4].map(task), { clock });
    expect(results.map((r) => (r.ok ? r.reply.taskId : r.error.code))).toEqual(['id-t-0', 'id-t-1', 'id-t-2', 'id-t-3', 'id-t-4']);
    // One pass for all five, then one refused task at a time as room appears.
    expect(calls.map((c) => (c.args[0] as { tasks: { taskKey: string }[] }).tasks.map((t) => t.taskKey))).toEqual([
      ['t-0', 't-1', 't-2', 't-3', 't-4'], ['t-2', 't-3', 't-4'], ['t-3', 't-4'], ['t-4'],
    ]);
    expect(stepping.sleeps).toEqual([250, 500, 1000]);
  });

  it('stops submitting BACKLOG_FULL tasks again after roomWaitMs, and not at all with 0', async () => {
    const { api, calls } = fakeApi({
      submitBatch: async (body) => body.tasks.map(() => ({ status: 429, body: { error: { code: 'BACKLOG_FULL', message: 'full', requestId: 'r' } } })),
    });
    expect((await submitMany(api, [task(1)], { roomWaitMs: 0, clock: steppingClock() }))[0]).toMatchObject({ ok: false, error: { code: 'BACKLOG_FULL', status: 429 } });
    expect(calls).toHaveLength(1);
    const clock = steppingClock();
    await submitMany(api, [task(2)], { roomWaitMs: 5_000, clock });
    expect(clock.sleeps).toEqual([250, 500, 1000, 2000]);
  });

  it('refuses a batchSize outside 1..100', async () => {
    const { api } = fakeApi({});
    await expect(submitMany(api, [task(1)], { batchSize: 101 })).rejects.toBeInstanceOf(RangeError);
  });
});
