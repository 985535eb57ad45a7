import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeliveryAttempt, Destination, Store } from '@baton/core';
import { storeTargets } from './support/databases';

/**
 * Webhook destinations and delivery attempts through the repository interfaces, on every
 * store: the lease claim (one holder at a time, taken over once expired), settle only under
 * the lease, resume only from PAUSED, and the audit most recent first with its filters.
 */

const T0 = 1_700_000_000_000;

function destination(spaceId: string, overrides: Partial<Destination> = {}): Destination {
  return {
    id: randomUUID(),
    spaceId,
    url: 'https://example.com/hook',
    eventTypes: ['task.*', 'pool.created'],
    sealedSecret: 'v1.iv.tag.data',
    state: 'ACTIVE',
    cursor: '0',
    lastDeliveredEventId: null,
    deliveredCount: 0,
    consecutiveFailures: 0,
    failedCount: 0,
    failingSince: null,
    nextAttemptAt: T0,
    leaseExpiresAt: null,
    leaseToken: null,
    pausedAt: null,
    pausedReason: null,
    lastError: null,
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  };
}

function attempt(spaceId: string, destinationId: string, overrides: Partial<DeliveryAttempt> = {}): DeliveryAttempt {
  return {
    id: randomUUID(),
    spaceId,
    destinationId,
    eventId: '100',
    attempt: 1,
    status: 'SUCCEEDED',
    httpStatus: 200,
    error: null,
    responseBody: 'ok',
    durationMs: 12,
    attemptedAt: T0,
    nextAttemptAt: null,
    ...overrides,
  };
}

describe.each(storeTargets())('webhook repositories on $name', (target) => {
  let store: Store;
  let closeStore: () => Promise<void>;
  const spaceId = randomUUID();
  const otherSpace = randomUUID();

  beforeEach(async () => {
    const opened = await target.open();
    store = opened.store;
    closeStore = opened.close;
  });
  afterEach(async () => closeStore());

  it('round-trips a destination, lists by creation, deletes, and keeps spaces apart', async () => {
    const a = destination(spaceId, { createdAt: T0, failingSince: T0 + 5, pausedReason: null });
    const b = destination(spaceId, { createdAt: T0 + 1 });
    const c = destination(otherSpace);
    await store.transaction(async (tx) => {
      for (const d of [a, b, c]) await tx.destinations.insert(d);
    });
    expect(await store.read((tx) => tx.destinations.get(spaceId, a.id))).toEqual(a);
    expect(await store.read((tx) => tx.destinations.get(otherSpace, a.id))).toBeUndefined();
    expect((await store.read((tx) => tx.destinations.list(spaceId, null, 10))).map((d) => d.id)).toEqual([a.id, b.id]);
    expect((await store.read((tx) => tx.destinations.list(spaceId, { createdAt: a.createdAt, id: a.id }, 10))).map((d) => d.id)).toEqual([b.id]);
    expect(await store.transaction((tx) => tx.destinations.delete(spaceId, a.id))).toBe(true);
    expect(await store.transaction((tx) => tx.destinations.delete(spaceId, a.id))).toBe(false);
    expect(await store.transaction((tx) => tx.destinations.delete(spaceId, c.id))).toBe(false);
  });

  it('claims due ACTIVE destinations under a lease: one holder, then whoever comes after it expires', async () => {
    const due = destination(spaceId);
    const later = destination(spaceId, { nextAttemptAt: T0 + 60_000 });
    const paused = destination(spaceId, { state: 'PAUSED', pausedAt: T0, pausedReason: 'failing' });
    await store.transaction(async (tx) => {
      for (const d of [due, later, paused]) await tx.destinations.insert(d);
    });
    const first = await store.transaction((tx) => tx.destinations.claimDue(T0, 'lease-a', T0 + 30_000, 10));
    expect(first.map((d) => [d.id, d.leaseToken, d.leaseExpiresAt])).toEqual([[due.id, 'lease-a', T0 + 30_000]]);
    expect(await store.transaction((tx) => tx.destinations.claimDue(T0 + 1, 'lease-b', T0 + 30_000, 10))).toEqual([]);
    const takenOver = await store.transaction((tx) => tx.destinations.claimDue(T0 + 30_000, 'lease-b', T0 + 60_000, 10));
    expect(takenOver.map((d) => d.id).sort()).toEqual([due.id].sort());
    // The first holder's lease is gone: its settle writes nothing.
    const progress = { ...takenOver[0]!, cursor: '42', leaseToken: null, leaseExpiresAt: null };
    expect(await store.transaction((tx) => tx.destinations.settle(spaceId, due.id, 'lease-a', progress))).toBe(false);
    expect(await store.transaction((tx) => tx.destinations.settle(spaceId, due.id, 'lease-b', progress))).toBe(true);
    expect(await store.read((tx) => tx.destinations.get(spaceId, due.id))).toMatchObject({ cursor: '42', leaseToken: null, leaseExpiresAt: null });
  });

  it('concurrent claims take different destinations (SKIP LOCKED on PostgreSQL)', async () => {
    const rows = Array.from({ length: 6 }, () => destination(spaceId));
    await store.transaction(async (tx) => {
      for (const d of rows) await tx.destinations.insert(d);
    });
    const claims = await Promise.all(['x', 'y', 'z'].map((token) => store.transaction((tx) => tx.destinations.claimDue(T0, token, T0 + 1_000, 2))));
    const ids = claims.flat().map((d) => d.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.sort()).toEqual(rows.map((d) => d.id).sort());
  });

  it('resumes only a PAUSED destination', async () => {
    const paused = destination(spaceId, { state: 'PAUSED', pausedAt: T0, pausedReason: 'failing', consecutiveFailures: 40, failingSince: T0 - 1 });
    const active = destination(spaceId);
    await store.transaction(async (tx) => {
      await tx.destinations.insert(paused);
      await tx.destinations.insert(active);
    });
    const resumed = await store.transaction((tx) => tx.destinations.resume(spaceId, paused.id, T0 + 5));
    expect(resumed).toMatchObject({ state: 'ACTIVE', pausedAt: null, pausedReason: null, consecutiveFailures: 0, failingSince: null, nextAttemptAt: T0 + 5 });
    expect(await store.transaction((tx) => tx.destinations.resume(spaceId, active.id, T0 + 5))).toBeUndefined();
    expect(await store.transaction((tx) => tx.destinations.resume(otherSpace, paused.id, T0 + 5))).toBeUndefined();
  });

  it('lists attempts most recent first, filtered and paged', async () => {
    const d1 = randomUUID();
    const d2 = randomUUID();
    const rows = [
      attempt(spaceId, d1, { attemptedAt: T0, status: 'FAILED', httpStatus: 500, error: 'HTTP 500', nextAttemptAt: T0 + 5_000 }),
      attempt(spaceId, d1, { attemptedAt: T0 + 1, attempt: 2 }),
      attempt(spaceId, d2, { attemptedAt: T0 + 2, eventId: '200', httpStatus: null, responseBody: null }),
      attempt(otherSpace, d1, { attemptedAt: T0 + 3 }),
    ];
    await store.transaction(async (tx) => {
      for (const a of rows) await tx.deliveryAttempts.insert(a);
    });
    const list = (filter = {}, before: { attemptedAt: number; id: string } | null = null, limit = 10) =>
      store.read((tx) => tx.deliveryAttempts.list(spaceId, filter, before, limit));
    expect(await list()).toEqual([rows[2], rows[1], rows[0]]);
    expect(await list({ destinationId: d1 })).toEqual([rows[1], rows[0]]);
    expect(await list({ status: 'FAILED' })).toEqual([rows[0]]);
    expect(await list({ eventId: '200' })).toEqual([rows[2]]);
    expect(await list({}, { attemptedAt: rows[1]!.attemptedAt, id: rows[1]!.id }, 10)).toEqual([rows[0]]);
    expect(await list({}, null, 1)).toEqual([rows[2]]);
  });
});
