import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Claim, ClaimFilter, ClaimKeyRow } from '@baton/core';
import { storeTargets, useTenantStore } from './support/databases';

/** Concurrency tests exist only on stores that run transactions side by side; elsewhere they are not defined (never reported skipped). */
const itOnlyWhereItRuns = (..._args: unknown[]): void => undefined;

/**
 * The claim repository on every store: the memory store (the reference), PGlite and PostgreSQL
 * behave alike. Companion of test/store-conformance.test.ts.
 */

const T0 = 1_700_000_000_123;

function claim(spaceId: string, claimKey: string, fencingToken: number, overrides: Partial<Claim> = {}): Claim {
  return {
    id: randomUUID(),
    spaceId,
    claimKey,
    scopeId: randomUUID(),
    holder: 'worker-a',
    holderSessionHash: 'a'.repeat(64),
    tokenHash: 'b'.repeat(64),
    tokenNonce: 'n',
    fencingToken,
    state: 'HELD',
    leaseExpiresAt: T0 + 30_000,
    endedAt: null,
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  };
}

const sleep = (ms: number): Promise<'slept'> => new Promise((r) => setTimeout(() => r('slept'), ms));

describe.each(storeTargets())('claim store conformance on $name', (target) => {
  const tenant = useTenantStore(target, T0);

  /** Locks the key, advances it once and inserts `c` with the new token, as an acquire does. */
  async function acquired(c: Claim): Promise<Claim> {
    await tenant.store.transaction(async (tx) => {
      const key = await tx.claims.lockKey(c.spaceId, c.claimKey, T0);
      await tx.claims.advanceKey({ ...key, lastFencingToken: c.fencingToken, updatedAt: T0 });
      await tx.claims.insert(c);
    });
    return c;
  }

  it('creates a key row at 0 on first lock, keeps it, and lets its fencing token only grow', async () => {
    const { store, spaceId } = tenant;
    const first = await store.transaction((tx) => tx.claims.lockKey(spaceId, 'k', T0));
    expect(first).toEqual<ClaimKeyRow>({ spaceId, claimKey: 'k', lastFencingToken: 0, createdAt: T0, updatedAt: T0 });
    await store.transaction((tx) => tx.claims.advanceKey({ ...first, lastFencingToken: 1, updatedAt: T0 + 1 }));
    const again = await store.transaction((tx) => tx.claims.lockKey(spaceId, 'k', T0 + 5));
    expect(again).toEqual({ spaceId, claimKey: 'k', lastFencingToken: 1, createdAt: T0, updatedAt: T0 + 1 });
    await expect(store.transaction((tx) => tx.claims.advanceKey({ ...again, lastFencingToken: 1 }))).rejects.toThrow();
    await expect(store.transaction((tx) => tx.claims.advanceKey({ ...again, lastFencingToken: 0 }))).rejects.toThrow();
    await store.transaction((tx) => tx.claims.advanceKey({ ...again, lastFencingToken: 9_007_199_254_740_991 }));
    expect((await store.transaction((tx) => tx.claims.lockKey(spaceId, 'k', T0))).lastFencingToken).toBe(9_007_199_254_740_991);
    // Keys are per space and compared exactly.
    expect((await store.transaction((tx) => tx.claims.lockKey(spaceId, 'K', T0))).lastFencingToken).toBe(0);
  });

  it('inserts, gets (also for update), finds the HELD claim of a key and updates; refuses a duplicate and an update of a missing claim', async () => {
    const { store, spaceId } = tenant;
    const c = await acquired(claim(spaceId, 'k', 1));
    expect(await store.read((tx) => tx.claims.get(spaceId, c.id))).toEqual(c);
    expect(await store.transaction((tx) => tx.claims.get(spaceId, c.id, { forUpdate: true }))).toEqual(c);
    expect(await store.transaction((tx) => tx.claims.getHeld(spaceId, 'k', { forUpdate: true }))).toEqual(c);
    expect(await store.read((tx) => tx.claims.getHeld(spaceId, 'other'))).toBeUndefined();
    expect(await store.read((tx) => tx.claims.get(randomUUID(), c.id))).toBeUndefined();

    const released: Claim = { ...c, state: 'RELEASED', endedAt: T0 + 5, updatedAt: T0 + 5 };
    await store.transaction((tx) => tx.claims.update(released));
    expect(await store.read((tx) => tx.claims.get(spaceId, c.id))).toEqual(released);
    expect(await store.read((tx) => tx.claims.getHeld(spaceId, 'k'))).toBeUndefined();

    await expect(store.transaction((tx) => tx.claims.insert({ ...c }))).rejects.toThrow();
    await expect(store.transaction((tx) => tx.claims.update(claim(spaceId, 'k', 1)))).rejects.toThrow();
  });

  it('refuses a second HELD claim of a key and a repeated fencing token of a key', async () => {
    const { store, spaceId } = tenant;
    const c = await acquired(claim(spaceId, 'k', 1));
    await expect(acquired(claim(spaceId, 'k', 2))).rejects.toThrow();
    await store.transaction((tx) => tx.claims.update({ ...c, state: 'EXPIRED', endedAt: T0 + 1, updatedAt: T0 + 1 }));
    await expect(store.transaction((tx) => tx.claims.insert(claim(spaceId, 'k', 1)))).rejects.toThrow();
    await acquired(claim(spaceId, 'k', 2));
    expect((await store.read((tx) => tx.claims.getHeld(spaceId, 'k')))?.fencingToken).toBe(2);
  });

  it('lists in (createdAt, id) order, filters by key, scope and state, and pages with an exclusive position', async () => {
    const { store, spaceId } = tenant;
    const scopeId = randomUUID();
    const a = await acquired(claim(spaceId, 'a', 1, { createdAt: T0 + 1, scopeId }));
    const b = await acquired(claim(spaceId, 'b', 1, { createdAt: T0 + 2 }));
    const a2 = claim(spaceId, 'a', 2, { createdAt: T0 + 3, scopeId });
    await store.transaction(async (tx) => {
      await tx.claims.update({ ...a, state: 'RELEASED', endedAt: T0 + 3, updatedAt: T0 + 3 });
      await tx.claims.advanceKey({ ...(await tx.claims.lockKey(spaceId, 'a', T0)), lastFencingToken: 2 });
      await tx.claims.insert(a2);
    });
    const none: ClaimFilter = { claimKey: null, scopeId: null, states: null };
    const ids = async (filter: Partial<ClaimFilter>, after: { createdAt: number; id: string } | null = null, limit = 10) =>
      (await store.read((tx) => tx.claims.list(spaceId, { ...none, ...filter }, after, limit))).map((c) => c.id);
    expect(await ids({})).toEqual([a.id, b.id, a2.id]);
    expect(await ids({ claimKey: 'a' })).toEqual([a.id, a2.id]);
    expect(await ids({ scopeId })).toEqual([a.id, a2.id]);
    expect(await ids({ states: ['HELD'] })).toEqual([b.id, a2.id]);
    expect(await ids({ states: ['RELEASED', 'EXPIRED'] })).toEqual([a.id]);
    expect(await ids({ claimKey: 'a', states: ['HELD'] })).toEqual([a2.id]);
    expect(await ids({}, null, 2)).toEqual([a.id, b.id]);
    expect(await ids({}, { createdAt: b.createdAt, id: b.id })).toEqual([a2.id]);
    expect(await store.read((tx) => tx.claims.list(randomUUID(), none, null, 10))).toEqual([]);
  });

  it('takes HELD claims whose lease ran out, earliest first, up to the limit; counts live claims per space', async () => {
    const { store, spaceId } = tenant;
    const late = await acquired(claim(spaceId, 'late', 1, { leaseExpiresAt: T0 + 20 }));
    const early = await acquired(claim(spaceId, 'early', 1, { leaseExpiresAt: T0 + 10 }));
    const live = await acquired(claim(spaceId, 'live', 1, { leaseExpiresAt: T0 + 1_000 }));
    const gone = await acquired(claim(spaceId, 'gone', 1, { leaseExpiresAt: T0 + 5 }));
    await store.transaction((tx) => tx.claims.update({ ...gone, state: 'RELEASED', endedAt: T0 + 1, updatedAt: T0 + 1 }));

    expect((await store.transaction((tx) => tx.claims.claimExpired(T0 + 20, 10))).map((c) => c.id)).toEqual([early.id, late.id]);
    expect((await store.transaction((tx) => tx.claims.claimExpired(T0 + 20, 1))).map((c) => c.id)).toEqual([early.id]);
    expect(await store.transaction((tx) => tx.claims.claimExpired(T0 + 9, 10))).toEqual([]);

    const other = await tenant.otherSpace();
    await acquired(claim(other, 'x', 1, { leaseExpiresAt: T0 + 1_000 }));
    const counts = await store.read((tx) => tx.claims.countLive([spaceId, other, randomUUID()], T0 + 15));
    expect(Object.fromEntries(counts)).toEqual({ [spaceId]: 2, [other]: 1 }); // late and live; early ran out
    expect(live.state).toBe('HELD');
  });

  (target.concurrentTransactions ? it : itOnlyWhereItRuns)('skips an expired claim another transaction holds', async () => {
    const { store, spaceId } = tenant;
    const c = await acquired(claim(spaceId, 'k', 1, { leaseExpiresAt: T0 + 10 }));
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const lockedNow = new Promise<void>((r) => (locked = r));
    const holder = store.transaction(async (tx) => {
      await tx.claims.get(spaceId, c.id, { forUpdate: true });
      locked();
      await held;
    });
    await lockedNow;
    expect(await store.transaction((tx) => tx.claims.claimExpired(T0 + 20, 10))).toEqual([]);
    release();
    await holder;
    expect((await store.transaction((tx) => tx.claims.claimExpired(T0 + 20, 10))).map((x) => x.id)).toEqual([c.id]);
  });

  (target.concurrentTransactions ? it : itOnlyWhereItRuns)('puts acquires of one key one after another: a second lockKey waits and then reads the advanced token', async () => {
    const { store, spaceId } = tenant;
    await store.transaction((tx) => tx.claims.lockKey(spaceId, 'k', T0));
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const lockedNow = new Promise<void>((r) => (locked = r));
    const first = store.transaction(async (tx) => {
      const key = await tx.claims.lockKey(spaceId, 'k', T0);
      locked();
      await held;
      await tx.claims.advanceKey({ ...key, lastFencingToken: key.lastFencingToken + 1 });
    });
    await lockedNow;
    const second = store.transaction((tx) => tx.claims.lockKey(spaceId, 'k', T0));
    expect(await Promise.race([second.then(() => 'read'), sleep(200)])).toBe('slept');
    release();
    await first;
    expect((await second).lastFencingToken).toBe(1);
  });

  (target.concurrentTransactions ? it : itOnlyWhereItRuns)('a new key locked by one transaction is waited for by another creating it too', async () => {
    const { store, spaceId } = tenant;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const lockedNow = new Promise<void>((r) => (locked = r));
    const first = store.transaction(async (tx) => {
      const key = await tx.claims.lockKey(spaceId, 'fresh', T0);
      expect(key.lastFencingToken).toBe(0);
      locked();
      await held;
      await tx.claims.advanceKey({ ...key, lastFencingToken: 1 });
    });
    await lockedNow;
    const second = store.transaction((tx) => tx.claims.lockKey(spaceId, 'fresh', T0));
    expect(await Promise.race([second.then(() => 'read'), sleep(200)])).toBe('slept');
    release();
    await first;
    expect((await second).lastFencingToken).toBe(1);
  });
});
