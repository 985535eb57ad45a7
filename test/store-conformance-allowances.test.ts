import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { allowances, defaultSpaceLimits, SeededRandom, type Allowance, type AllowanceWaiter, type Store } from '@baton/core';
import { journalWhen, storeTargets, useTenantStore } from './support/databases';

/**
 * Allowances through the repository interfaces on every store, and the grant sweep's promise:
 * with several servers sweeping one database at once, no waiter is granted twice and no window
 * goes over its limit.
 */
const T0 = 1_700_000_000_000;

describe.each(storeTargets())('allowance store conformance on $name', (target) => {
  const tenant = useTenantStore(target, T0);

  const allowance = (over: Partial<Allowance> = {}): Allowance => ({
    id: randomUUID(), spaceId: tenant.spaceId, name: `q-${randomUUID()}`, unitsLimit: 10, windowSeconds: 60, windowStartsAt: T0, usedUnits: 0,
    cooldownUntil: null, cooldownReason: null, nextPosition: 1, wakeAt: null, createdAt: T0, updatedAt: T0, ...over,
  });
  const waiter = (allowanceId: string, position: number, over: Partial<AllowanceWaiter> = {}): AllowanceWaiter => ({
    id: randomUUID(), spaceId: tenant.spaceId, allowanceId, position, scopeId: randomUUID(), holder: 'h', units: 1, state: 'WAITING',
    grantedAt: null, expiresAt: T0 + 60_000, createdAt: T0, updatedAt: T0, ...over,
  });

  it('round-trips an allowance, finds it by name, lists by name, updates it', async () => {
    const { store, spaceId } = tenant;
    const a = allowance({ name: 'b-quota', cooldownUntil: T0 + 5_000, cooldownReason: 'provider', wakeAt: T0 + 1 });
    const b = allowance({ name: 'a-quota' });
    await store.transaction(async (tx) => {
      await tx.allowances.insert(a);
      await tx.allowances.insert(b);
    });
    await store.read(async (tx) => {
      expect(await tx.allowances.get(spaceId, a.id)).toEqual(a);
      expect(await tx.allowances.getByName(spaceId, 'a-quota')).toEqual(b);
      expect((await tx.allowances.list(spaceId, null, 10)).map((x) => x.name)).toEqual(['a-quota', 'b-quota']);
      expect((await tx.allowances.list(spaceId, 'a-quota', 10)).map((x) => x.name)).toEqual(['b-quota']);
      expect(await tx.allowances.get(randomUUID(), a.id)).toBeUndefined(); // tenant isolation
    });
    await store.transaction((tx) => tx.allowances.update({ ...a, usedUnits: 4, updatedAt: T0 + 1 }));
    expect((await store.read((tx) => tx.allowances.get(spaceId, a.id)))?.usedUnits).toBe(4);
  });

  it('lists the line in position order and counts who waits', async () => {
    const { store, spaceId } = tenant;
    const a = allowance();
    await store.transaction(async (tx) => {
      await tx.allowances.insert(a);
      for (const p of [3, 1, 2]) await tx.allowanceWaiters.insert(waiter(a.id, p));
      await tx.allowanceWaiters.insert(waiter(a.id, 4, { state: 'GRANTED', grantedAt: T0 }));
    });
    await store.read(async (tx) => {
      expect((await tx.allowanceWaiters.listWaiting(spaceId, a.id, 10)).map((w) => w.position)).toEqual([1, 2, 3]);
      expect((await tx.allowanceWaiters.listWaiting(spaceId, a.id, 2)).map((w) => w.position)).toEqual([1, 2]);
      expect(await tx.allowanceWaiters.countWaiting(spaceId, a.id)).toBe(3);
      expect(await tx.allowanceWaiters.countWaitingInSpace(spaceId)).toBe(3);
    });
  });

  it('censusLines counts the WAITING waiters of each line across spaces, the longest first, at most `limit`', async () => {
    const { store, spaceId } = tenant;
    const otherSpace = await tenant.otherSpace();
    const long = allowance({ name: 'long' });
    const short = allowance({ name: 'short' });
    const idle = allowance({ name: 'idle' });
    const elsewhere = allowance({ spaceId: otherSpace, name: 'long' });
    await store.transaction(async (tx) => {
      for (const a of [long, short, idle, elsewhere]) await tx.allowances.insert(a);
      for (const p of [1, 2, 3]) await tx.allowanceWaiters.insert(waiter(long.id, p, { createdAt: T0 + 10 * p }));
      await tx.allowanceWaiters.insert(waiter(long.id, 4, { state: 'GRANTED', grantedAt: T0, createdAt: T0 }));
      await tx.allowanceWaiters.insert(waiter(short.id, 1, { createdAt: T0 + 5 }));
      // Nobody waits on idle any more: it is left out.
      await tx.allowanceWaiters.insert(waiter(idle.id, 1, { state: 'EXPIRED' }));
      for (const p of [1, 2]) await tx.allowanceWaiters.insert({ ...waiter(elsewhere.id, p), spaceId: otherSpace });
    });
    expect(await store.read((tx) => tx.allowanceWaiters.censusLines(10))).toEqual([
      { spaceId, allowanceId: long.id, allowanceName: 'long', waiting: 3, oldestWaitingAt: T0 + 10 },
      { spaceId: otherSpace, allowanceId: elsewhere.id, allowanceName: 'long', waiting: 2, oldestWaitingAt: T0 },
      { spaceId, allowanceId: short.id, allowanceName: 'short', waiting: 1, oldestWaitingAt: T0 + 5 },
    ]);
    expect((await store.read((tx) => tx.allowanceWaiters.censusLines(1))).map((l) => l.allowanceId)).toEqual([long.id]);
  });

  it('finds a consumption by workKey within its allowance only', async () => {
    const { store, spaceId } = tenant;
    const a = allowance();
    const other = allowance();
    await store.transaction(async (tx) => {
      await tx.allowances.insert(a);
      await tx.allowances.insert(other);
      await tx.consumptions.insert({ id: randomUUID(), spaceId, allowanceId: a.id, scopeId: randomUUID(), holder: 'h', units: 2, workKey: 'k1', windowStartsAt: T0, createdAt: T0 });
      await tx.consumptions.insert({ id: randomUUID(), spaceId, allowanceId: a.id, scopeId: randomUUID(), holder: 'h', units: 1, workKey: null, windowStartsAt: T0, createdAt: T0 });
    });
    await store.read(async (tx) => {
      expect((await tx.consumptions.getByWorkKey(spaceId, a.id, 'k1'))?.units).toBe(2);
      expect(await tx.consumptions.getByWorkKey(spaceId, other.id, 'k1')).toBeUndefined();
    });
  });

  it('claims only allowances that are due, earliest first', async () => {
    const { store } = tenant;
    const due = allowance({ wakeAt: T0 + 10 });
    const later = allowance({ wakeAt: T0 + 10_000 });
    const idle = allowance({ wakeAt: null });
    await store.transaction(async (tx) => {
      for (const a of [later, idle, due]) await tx.allowances.insert(a);
    });
    const claimed = await store.transaction((tx) => tx.allowances.claimDue(T0 + 100, 10));
    expect(claimed.map((a) => a.id)).toContain(due.id);
    expect(claimed.map((a) => a.id)).not.toContain(later.id);
    expect(claimed.map((a) => a.id)).not.toContain(idle.id);
  });

  it('with several sweepers at once, every waiter is granted once and no window exceeds its limit', async () => {
    const { store, spaceId } = tenant;
    const random = new SeededRandom(5);
    const ctx = (nowMs: number) => (tx: Parameters<Parameters<Store['transaction']>[0]>[0]) => ({ tx, spaceId, nowMs, random, limits: defaultSpaceLimits });
    const created = await store.transaction((tx) => allowances.createAllowance(ctx(T0)(tx), { name: 'shared', unitsLimit: 5, windowSeconds: 1 }, true));
    const waiters: string[] = [];
    for (let i = 0; i < 12; i++) {
      const w = await store.transaction((tx) => allowances.wait(ctx(T0)(tx), created.view.id, { scopeId: randomUUID(), units: 1, holder: `h${i}`, ttlSeconds: 3600 }));
      waiters.push(w.id);
    }
    // Three windows' worth of time, swept by four "servers" at once at every step.
    for (const nowMs of [T0 + 1_000, T0 + 2_000, T0 + 3_000]) {
      await Promise.all(Array.from({ length: 4 }, () => store.transaction((tx) => allowances.serveDueLines(tx, nowMs, 10))));
    }
    const journal = await journalWhen(store, spaceId, (events) => events.filter((e) => e.type === 'allowance.waiter_granted').length >= 12);
    const granted = journal.filter((e) => e.type === 'allowance.waiter_granted');
    const grantedIds = granted.map((e) => String(e.data.waiterId));
    expect(new Set(grantedIds).size).toBe(grantedIds.length);
    expect(grantedIds).toEqual(waiters.slice(0, grantedIds.length)); // in line order
    expect(grantedIds.length).toBe(12); // 5 at once, then 5 and 2 in the next windows
    const perWindow = new Map<string, number>();
    for (const e of granted) perWindow.set(String(e.data.windowStartsAt), (perWindow.get(String(e.data.windowStartsAt)) ?? 0) + 1);
    for (const used of perWindow.values()) expect(used).toBeLessThanOrEqual(5);
  });
});
