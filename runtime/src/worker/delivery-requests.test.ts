import { describe, expect, it } from 'vitest';
import type { Admitted, BatchItemReply, WorkerApi } from '../contract';
import { ManualClock } from '../testing/manual-clock';
import { deliveryRequests } from './delivery-requests';
import { withdrawn } from './flusher';

const admitBody = { scopeId: 's', mailboxId: 'mb', holder: 'h', holderSession: 'hs', leaseSeconds: 30, waitMs: 1_000 };
const refused = (messageId: string): BatchItemReply<never> => ({ messageId, status: 409, body: { error: { code: 'LEASE_LOST', message: 'lease lost', requestId: 'r1' } } } as BatchItemReply<never>);

/** A client that records each call by route and answers every item 200, except the messageIds in `refuse`. */
function recordingClient(refuse: string[] = []) {
  const calls: { route: string; messageId?: string; body: unknown; options?: unknown }[] = [];
  const replyTo = <T>(items: { messageId: string }[], body: T) => items.map((item) => (refuse.includes(item.messageId) ? refused(item.messageId) : { messageId: item.messageId, status: 200, body }));
  const client = {
    admit: async (body: unknown, options: unknown) => (calls.push({ route: 'admit', body, options }), { messageId: 'a1' } as Admitted),
    admitBatch: async (body: unknown, options: unknown) => (calls.push({ route: 'admit-batch', body, options }), [] as Admitted[]),
    complete: async (messageId: string, body: unknown) => (calls.push({ route: 'complete', messageId, body }), { state: 'ACKED', resultMessageId: null }),
    nack: async (messageId: string, body: unknown) => (calls.push({ route: 'nack', messageId, body }), { state: 'READY' }),
    renew: async (messageId: string, body: unknown, options: unknown) => {
      calls.push({ route: 'renew', messageId, body, options });
      if (refuse.includes(messageId)) throw Object.assign(new Error('lease lost'), { code: 'LEASE_LOST', status: 409 });
      return { leaseExpiresAt: '2026-01-01T00:00:30.000Z' };
    },
    completeBatch: async ({ items }: { items: { messageId: string }[] }) => (calls.push({ route: 'complete-batch', body: items }), replyTo(items, { state: 'ACKED', resultMessageId: null })),
    nackBatch: async ({ items }: { items: { messageId: string }[] }) => (calls.push({ route: 'nack-batch', body: items }), replyTo(items, { state: 'READY' })),
    renewBatch: async ({ items }: { items: { messageId: string }[] }) => (calls.push({ route: 'renew-batch', body: items }), replyTo(items, { leaseExpiresAt: '2026-01-01T00:00:30.000Z' })),
  } as unknown as WorkerApi;
  return { client, calls };
}

describe('deliveryRequests, single routes (batching off)', () => {
  it('admits one delivery per request, whatever the free slots', async () => {
    const { client, calls } = recordingClient();
    const requests = deliveryRequests(client, new ManualClock(), null);
    const signal = new AbortController().signal;
    expect(await requests.admit(admitBody, 5, { signal, idempotencyKey: 'k1' })).toEqual([{ messageId: 'a1' }]);
    expect(calls).toEqual([{ route: 'admit', body: admitBody, options: { signal, idempotencyKey: 'k1' } }]);
  });

  it('sends a complete or nack on its route with the messageId in the path, unless withdrawn first', async () => {
    const { client, calls } = recordingClient();
    const requests = deliveryRequests(client, new ManualClock(), null);
    expect(await requests.complete({ messageId: 'm1', token: 't1', result: { payload: 1 } }, () => true)).toEqual({ ok: true, value: { state: 'ACKED', resultMessageId: null } });
    expect(await requests.nack({ messageId: 'm2', token: 't2', retry: false }, () => false)).toBe(withdrawn);
    expect(calls).toEqual([{ route: 'complete', messageId: 'm1', body: { token: 't1', result: { payload: 1 } } }]);
  });

  it('passes the renew its signal, and answers a refusal as an error result rather than a throw', async () => {
    const { client, calls } = recordingClient(['m1']);
    const requests = deliveryRequests(client, new ManualClock(), null);
    const signal = new AbortController().signal;
    const result = await requests.renew({ messageId: 'm1', token: 't1', leaseSeconds: 30 }, signal);
    expect(result).toMatchObject({ ok: false, error: { code: 'LEASE_LOST' } });
    expect(calls[0]).toEqual({ route: 'renew', messageId: 'm1', body: { token: 't1', leaseSeconds: 30 }, options: { signal } });
  });
});

describe('deliveryRequests, batched', () => {
  const batching = { maxItems: 3, delayMs: 0, maxInFlight: 1 };

  it('admits up to the free slots, within a batch request’s limit and at least one', async () => {
    const { client, calls } = recordingClient();
    const requests = deliveryRequests(client, new ManualClock(), batching);
    const options = { signal: new AbortController().signal };
    for (const freeSlots of [2, 10, 0]) await requests.admit(admitBody, freeSlots, options);
    expect(calls.map((c) => (c.body as { maxTasks: number }).maxTasks)).toEqual([2, 3, 1]);
  });

  it('gathers completes into one batch request and answers each item with its own result', async () => {
    const { client, calls } = recordingClient(['m2']);
    const clock = new ManualClock();
    const requests = deliveryRequests(client, clock, batching);
    const answers = Promise.all(['m1', 'm2'].map((messageId) => requests.complete({ messageId, token: `t-${messageId}` }, () => true)));
    await clock.advance(0);
    expect(calls).toEqual([{ route: 'complete-batch', body: [{ messageId: 'm1', token: 't-m1' }, { messageId: 'm2', token: 't-m2' }] }]);
    // A refused item comes back as the single route's error: the envelope's fields and the item's status.
    expect(await answers).toEqual([
      { ok: true, value: { state: 'ACKED', resultMessageId: null } },
      { ok: false, error: { code: 'LEASE_LOST', message: 'lease lost', requestId: 'r1', status: 409 } },
    ]);
  });

  it('sends nacks and renewals through their own batch routes', async () => {
    const { client, calls } = recordingClient();
    const clock = new ManualClock();
    const requests = deliveryRequests(client, clock, batching);
    const nacked = requests.nack({ messageId: 'm1', token: 't1', retry: true }, () => true);
    const renewed = requests.renew({ messageId: 'm2', token: 't2', leaseSeconds: 30 }, new AbortController().signal);
    await clock.advance(0);
    expect(await nacked).toEqual({ ok: true, value: { state: 'READY' } });
    expect(await renewed).toEqual({ ok: true, value: { leaseExpiresAt: '2026-01-01T00:00:30.000Z' } });
    expect(calls.map((c) => c.route)).toEqual(['nack-batch', 'renew-batch']);
  });
});
