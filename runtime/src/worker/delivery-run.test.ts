import { describe, expect, it } from 'vitest';
import type { Admitted } from '../contract';
import { ManualClock } from '../testing/manual-clock';
import type { DeliveryRequests } from './delivery-requests';
import { DeliveryRun } from './delivery-run';
import { DeliveryAbortedError, PermanentError } from './errors';
import { withdrawn, type ItemResult } from './flusher';
import type { HandlerContext, WorkerEvent } from './types';

const leaseLost = { code: 'LEASE_LOST', status: 409, message: 'lease lost', requestId: null };

/** Requests that answer as the test says: by default every complete, nack and renew succeeds. */
class FakeRequests implements DeliveryRequests {
  readonly sent: { op: 'complete' | 'nack' | 'renew'; atMs: number; body: object }[] = [];
  finishAnswer: ItemResult<never> | null = null;
  renewAnswer: ItemResult<never> | null = null;

  constructor(private readonly clock: ManualClock) {}

  admit = async (): Promise<Admitted[]> => [];
  complete = async (item: object, stillWanted: () => boolean) => this.finish('complete', item, stillWanted, { state: 'ACKED' as const, resultMessageId: null });
  nack = async (item: object, stillWanted: () => boolean) => this.finish('nack', item, stillWanted, { state: 'READY' as const });
  renew = async (item: object) => {
    this.sent.push({ op: 'renew', atMs: this.clock.now(), body: item });
    return this.renewAnswer ?? { ok: true as const, value: { leaseExpiresAt: new Date(this.clock.now() + 30_000).toISOString() } };
  };

  private finish<T>(op: 'complete' | 'nack', item: object, stillWanted: () => boolean, reply: T): ItemResult<T> {
    if (!stillWanted()) return withdrawn;
    this.sent.push({ op, atMs: this.clock.now(), body: item });
    return this.finishAnswer ?? { ok: true, value: reply };
  }

  ops(op: 'complete' | 'nack' | 'renew') {
    return this.sent.filter((s) => s.op === op);
  }
}

/** A run of one 30 s delivery whose handler the test finishes through `finish`. */
function setup() {
  const clock = new ManualClock();
  const requests = new FakeRequests(clock);
  const events: WorkerEvent<string>[] = [];
  const contexts: HandlerContext<string>[] = [];
  let finish!: { resolve: (value: unknown) => void; reject: (error: unknown) => void };
  let handlerReturns = 0;
  const admitted = {
    messageId: 'm1',
    taskId: 't1',
    mailboxId: 'mb',
    scopeId: 's',
    token: 'tok-1',
    attempt: 1,
    leaseExpiresAt: new Date(clock.now() + 30_000).toISOString(),
    workKey: null,
    payload: { taskId: 't1', input: 'hello' },
    claimed: { pools: [], quotas: [], budgets: [], workLimit: null },
  } as Admitted;
  const run = new DeliveryRun<string, unknown>(admitted, clock.now(), {
    handler: (context) => {
      contexts.push(context);
      return new Promise((resolve, reject) => (finish = { resolve, reject }));
    },
    requests,
    clock,
    leaseSeconds: 30,
    emit: (event) => events.push(event),
    onHandlerReturned: () => (handlerReturns += 1),
  });
  let settled = false;
  void run.settled.then(() => (settled = true));
  const types = () => events.map((e) => e.type);
  return { clock, requests, events, types, contexts, run, finish: () => finish, handlerReturns: () => handlerReturns, settled: () => settled };
}

describe('DeliveryRun', () => {
  it('hands the handler the delivery with its input, and completes with the returned value', async () => {
    const t = setup();
    t.run.start();
    await t.clock.advance(0);
    expect(t.contexts[0]!.delivery).toMatchObject({ messageId: 'm1', taskId: 't1', attempt: 1, input: 'hello', payload: { taskId: 't1', input: 'hello' } });
    t.finish().resolve('HELLO');
    await t.clock.advance(0);
    expect(t.requests.ops('complete').map((s) => s.body)).toEqual([{ messageId: 'm1', token: 'tok-1', result: { payload: 'HELLO' } }]);
    expect(t.types()).toEqual(['completed']);
    expect(t.handlerReturns()).toBe(1);
    expect(t.settled()).toBe(true);
  });

  it('completes without a result when the handler returns nothing', async () => {
    const t = setup();
    t.run.start();
    await t.clock.advance(0);
    t.finish().resolve(undefined);
    await t.clock.advance(0);
    expect(t.requests.ops('complete')[0]!.body).toEqual({ messageId: 'm1', token: 'tok-1' });
  });

  it('nacks with retry when the handler throws, and without retry on a permanent error', async () => {
    for (const [error, retry] of [
      [new Error('upstream 503'), true],
      [new PermanentError('bad input'), false],
    ] as const) {
      const t = setup();
      t.run.start();
      await t.clock.advance(0);
      t.finish().reject(error);
      await t.clock.advance(0);
      expect(t.requests.ops('nack').map((s) => s.body)).toEqual([{ messageId: 'm1', token: 'tok-1', retry }]);
      expect(t.events).toEqual([{ type: 'failed', messageId: 'm1', taskId: 't1', retry, reason: 'handler', error }]);
    }
  });

  it('renews while the handler runs and stops renewing once it returned', async () => {
    const t = setup();
    t.run.start();
    await t.clock.advance(25_000);
    expect(t.requests.ops('renew').map((s) => s.body)).toEqual([
      { messageId: 'm1', token: 'tok-1', leaseSeconds: 30 },
      { messageId: 'm1', token: 'tok-1', leaseSeconds: 30 },
    ]);
    expect(t.types()).toEqual(['renewed', 'renewed']);
    t.finish().resolve('done');
    await t.clock.advance(60_000);
    expect(t.requests.ops('renew')).toHaveLength(2);
    expect(t.clock.pending).toBe(0);
  });

  it('on LEASE_LOST aborts the handler and sends nothing more, even when the handler returns later', async () => {
    const t = setup();
    t.requests.renewAnswer = { ok: false, error: leaseLost };
    t.run.start();
    await t.clock.advance(10_000);
    expect(t.contexts[0]!.signal.reason).toEqual(new DeliveryAbortedError('m1', 'lease_lost'));
    expect(t.events.at(-1)).toEqual({ type: 'lease_lost', messageId: 'm1', taskId: 't1', cause: 'LEASE_LOST' });
    expect(t.settled()).toBe(true);
    t.finish().resolve('too late');
    await t.clock.advance(0);
    expect(t.handlerReturns()).toBe(1);
    expect(t.requests.ops('complete')).toHaveLength(0);
  });

  it('reports a renew that failed otherwise as an error, and the lease EXPIRED at its deadline', async () => {
    const t = setup();
    t.requests.renewAnswer = { ok: false, error: { code: 'NETWORK', status: 0, message: 'reset', requestId: null } };
    t.run.start();
    await t.clock.advance(30_000);
    expect(t.types().filter((type) => type === 'error').length).toBeGreaterThan(1);
    expect(t.events.find((e) => e.type === 'error')).toMatchObject({ stage: 'renew', messageId: 'm1', retryInMs: expect.any(Number) });
    expect(t.events.at(-1)).toMatchObject({ type: 'lease_lost', cause: 'EXPIRED' });
    expect(t.contexts[0]!.signal.aborted).toBe(true);
  });

  it('a complete still waiting past the lease is withdrawn and reported lost (EXPIRED), never sent', async () => {
    const t = setup();
    t.run.start();
    await t.clock.advance(0);
    t.clock.jump(31_000); // the event loop was blocked past the lease: no renew, no watch fired
    t.finish().resolve('late');
    await t.clock.advance(0);
    expect(t.requests.ops('complete')).toHaveLength(0);
    expect(t.events.at(-1)).toMatchObject({ type: 'lease_lost', cause: 'EXPIRED' });
  });

  it('a complete the server refuses loses the lease; any other failure is reported as a complete error', async () => {
    const lost = setup();
    lost.requests.finishAnswer = { ok: false, error: leaseLost };
    lost.run.start();
    await lost.clock.advance(0);
    lost.finish().resolve('x');
    await lost.clock.advance(0);
    expect(lost.types()).toEqual(['lease_lost']);

    const failed = setup();
    failed.requests.finishAnswer = { ok: false, error: { code: 'INTERNAL', status: 500, message: 'boom', requestId: null } };
    failed.run.start();
    await failed.clock.advance(0);
    failed.finish().resolve('x');
    await failed.clock.advance(0);
    expect(failed.events).toEqual([{ type: 'error', stage: 'complete', messageId: 'm1', error: expect.objectContaining({ code: 'INTERNAL' }) }]);
    expect(failed.settled()).toBe(true);
  });

  it('abandon aborts the handler, nacks with retry for the drain, and ignores what the handler returns later', async () => {
    const t = setup();
    t.run.start();
    await t.clock.advance(0);
    await t.run.abandon();
    expect(t.contexts[0]!.signal.reason).toEqual(new DeliveryAbortedError('m1', 'drain'));
    expect(t.requests.ops('nack').map((s) => s.body)).toEqual([{ messageId: 'm1', token: 'tok-1', retry: true }]);
    expect(t.events).toEqual([{ type: 'failed', messageId: 'm1', taskId: 't1', retry: true, reason: 'drain' }]);
    expect(t.settled()).toBe(true);
    t.finish().resolve('late');
    await t.clock.advance(60_000);
    expect(t.requests.ops('complete')).toHaveLength(0);
    expect(t.requests.ops('renew')).toHaveLength(0);
  });

  it('abandon leaves a delivery that already finished alone', async () => {
    const t = setup();
    t.run.start();
    await t.clock.advance(0);
    t.finish().resolve('done');
    await t.clock.advance(0);
    await t.run.abandon();
    expect(t.requests.ops('nack')).toHaveLength(0);
    expect(t.types()).toEqual(['completed']);
  });
});
