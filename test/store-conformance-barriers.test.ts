import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Barrier, BarrierArrival, Org, Space, Store } from '@baton/core';
import { storeTargets } from './support/databases';

/**
 * The barrier repository on every store: the memory store (the reference), PGlite and
 * PostgreSQL behave alike. Companion of test/store-conformance.test.ts.
 */

const T0 = 1_700_000_000_123;

function barrier(spaceId: string, overrides: Partial<Barrier> = {}): Barrier {
  return {
    id: randomUUID(),
    spaceId,
    scopeId: randomUUID(),
    target: 3,
    epoch: 1,
    state: 'WAITING',
    arrivals: 0,
    releasedAt: null,
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  };
}

function arrival(b: Barrier, arrivalKey: string, overrides: Partial<BarrierArrival> = {}): BarrierArrival {
  return { spaceId: b.spaceId, barrierId: b.id, epoch: b.epoch, arrivalKey, arrivedAt: T0 + 1, ...overrides };
}

const sleep = (ms: number): Promise<'slept'> => new Promise((r) => setTimeout(() => r('slept'), ms));

describe.each(storeTargets())('barrier store conformance on $name', (target) => {
  let store: Store;
  let closeStore: () => Promise<void>;

  beforeEach(async () => {
    const opened = await target.open();
    store = opened.store;
    closeStore = opened.close;
  });

  afterEach(async () => {
    await closeStore();
  });

  async function tenant(): Promise<{ org: Org; space: Space }> {
    const org: Org = { id: randomUUID(), name: 'acme', plan: 'FREE', limits: null, createdAt: T0, updatedAt: T0 };
    const space: Space = { id: randomUUID(), orgId: org.id, name: 'default', limits: null, createdAt: T0, updatedAt: T0 };
    await store.transaction(async (tx) => {
      await tx.orgs.insert(org);
      await tx.spaces.insert(space);
    });
    return { org, space };
  }

  async function committed(spaceId: string, overrides: Partial<Barrier> = {}): Promise<Barrier> {
    const b = barrier(spaceId, overrides);
    await store.transaction((tx) => tx.barriers.insert(b));
    return b;
  }

  it('inserts, gets (also for update) and updates; refuses a duplicate id and an update of a missing barrier', async () => {
    const { space: s } = await tenant();
    const b = await committed(s.id, { target: 100_000 });
    expect(await store.read((tx) => tx.barriers.get(s.id, b.id))).toEqual(b);
    expect(await store.transaction((tx) => tx.barriers.get(s.id, b.id, { forUpdate: true }))).toEqual(b);
    expect(await store.read((tx) => tx.barriers.get(s.id, randomUUID()))).toBeUndefined();

    const released: Barrier = { ...b, target: 2, arrivals: 2, state: 'RELEASED', releasedAt: T0 + 5, epoch: 9_007_199_254_740_991, updatedAt: T0 + 5 };
    await store.transaction((tx) => tx.barriers.update(released));
    expect(await store.read((tx) => tx.barriers.get(s.id, b.id))).toEqual(released);

    await expect(store.transaction((tx) => tx.barriers.insert({ ...b }))).rejects.toThrow();
    await expect(store.transaction((tx) => tx.barriers.update(barrier(s.id)))).rejects.toThrow();
  });

  it('lists in (createdAt, id) order, filters by state and pages with an exclusive position', async () => {
    const { org: o, space: s } = await tenant();
    const rows = [
      barrier(s.id, { createdAt: T0 + 20, id: `b-${randomUUID()}` }),
      barrier(s.id, { createdAt: T0 + 10, state: 'CANCELLED' }),
      barrier(s.id, { createdAt: T0 + 20, id: `a-${randomUUID()}`, state: 'RELEASED', target: 1, arrivals: 1, releasedAt: T0 + 21 }),
      barrier(s.id, { createdAt: T0 + 30 }),
    ];
    await store.transaction(async (tx) => {
      for (const b of rows) await tx.barriers.insert(b);
    });
    const other: Space = { id: randomUUID(), orgId: o.id, name: 'other', limits: null, createdAt: T0, updatedAt: T0 };
    await store.transaction((tx) => tx.spaces.insert(other));
    await committed(other.id);

    const expected = [rows[1]!, rows[2]!, rows[0]!, rows[3]!];
    expect(await store.read((tx) => tx.barriers.list(s.id, null, null, 100))).toEqual(expected);
    expect((await store.read((tx) => tx.barriers.list(s.id, ['WAITING'], null, 100))).map((b) => b.id)).toEqual([rows[0]!.id, rows[3]!.id]);
    expect((await store.read((tx) => tx.barriers.list(s.id, ['RELEASED', 'CANCELLED'], null, 100))).map((b) => b.id)).toEqual([rows[1]!.id, rows[2]!.id]);
    expect(await store.read((tx) => tx.barriers.list(s.id, [], null, 100))).toEqual([]);

    const paged: string[] = [];
    let after: { createdAt: number; id: string } | null = null;
    for (;;) {
      const page: Barrier[] = await store.read((tx) => tx.barriers.list(s.id, null, after, 1));
      if (page.length === 0) break;
      paged.push(page[0]!.id);
      after = { createdAt: page[0]!.createdAt, id: page[0]!.id };
    }
    expect(paged).toEqual(expected.map((b) => b.id));
    // Equal createdAt: the id breaks the tie, exclusively.
    expect((await store.read((tx) => tx.barriers.list(s.id, null, { createdAt: T0 + 20, id: rows[2]!.id }, 10))).map((b) => b.id)).toEqual([rows[0]!.id, rows[3]!.id]);
    expect(await store.read((tx) => tx.barriers.list(s.id, ['WAITING'], { createdAt: T0 + 30, id: rows[3]!.id }, 10))).toEqual([]);
  });

  it('counts an arrival once per epoch: the same key twice in one epoch is refused, in another epoch it is new', async () => {
    const { space: s } = await tenant();
    const b = await committed(s.id);
    const a = arrival(b, 'worker-1');
    await store.transaction(async (tx) => {
      await tx.barriers.insertArrival(a);
      await tx.barriers.insertArrival(arrival(b, 'worker-2'));
      await tx.barriers.insertArrival(arrival(b, 'worker-1', { epoch: 2 }));
    });
    expect(await store.read((tx) => tx.barriers.getArrival(s.id, b.id, 1, 'worker-1'))).toEqual(a);
    expect(await store.read((tx) => tx.barriers.getArrival(s.id, b.id, 1, 'Worker-1'))).toBeUndefined();
    expect(await store.read((tx) => tx.barriers.getArrival(s.id, b.id, 3, 'worker-1'))).toBeUndefined();
    expect(await store.read((tx) => tx.barriers.countArrivals(s.id, b.id, 1))).toBe(2);
    expect(await store.read((tx) => tx.barriers.countArrivals(s.id, b.id, 2))).toBe(1);
    expect(await store.read((tx) => tx.barriers.countArrivals(s.id, b.id, 3))).toBe(0);

    await expect(store.transaction((tx) => tx.barriers.insertArrival(arrival(b, 'worker-1', { arrivedAt: T0 + 9 })))).rejects.toThrow();
    expect(await store.read((tx) => tx.barriers.countArrivals(s.id, b.id, 1))).toBe(2);
  });

  it('round-trips keys of any text, 512 characters long', async () => {
    const { space: s } = await tenant();
    const b = await committed(s.id);
    const keys = ['zürich ✓', 'k'.repeat(512), ' spaced ', 'a\tb'];
    await store.transaction(async (tx) => {
      for (const k of keys) await tx.barriers.insertArrival(arrival(b, k));
    });
    for (const k of keys) expect(await store.read((tx) => tx.barriers.getArrival(s.id, b.id, 1, k))).toEqual(arrival(b, k));
  });

  it('rolls back a barrier and its arrivals with the transaction', async () => {
    const { space: s } = await tenant();
    const existing = await committed(s.id);
    const fresh = barrier(s.id);
    const failure = new Error('boom');
    await expect(
      store.transaction(async (tx) => {
        await tx.barriers.insert(fresh);
        await tx.barriers.insertArrival(arrival(existing, 'a'));
        await tx.barriers.update({ ...existing, arrivals: 1, updatedAt: T0 + 1 });
        throw failure;
      }),
    ).rejects.toBe(failure);
    await store.read(async (tx) => {
      expect(await tx.barriers.get(s.id, fresh.id)).toBeUndefined();
      expect(await tx.barriers.get(s.id, existing.id)).toEqual(existing);
      expect(await tx.barriers.countArrivals(s.id, existing.id, 1)).toBe(0);
    });
  });

  it('keeps spaces apart', async () => {
    const { org: o, space: s } = await tenant();
    const other: Space = { id: randomUUID(), orgId: o.id, name: 'other', limits: null, createdAt: T0, updatedAt: T0 };
    await store.transaction((tx) => tx.spaces.insert(other));
    const b = await committed(s.id);
    await store.transaction((tx) => tx.barriers.insertArrival(arrival(b, 'a')));
    await store.read(async (tx) => {
      expect(await tx.barriers.get(other.id, b.id)).toBeUndefined();
      expect(await tx.barriers.list(other.id, null, null, 10)).toEqual([]);
      expect(await tx.barriers.getArrival(other.id, b.id, 1, 'a')).toBeUndefined();
      expect(await tx.barriers.countArrivals(other.id, b.id, 1)).toBe(0);
    });
    await expect(store.transaction((tx) => tx.barriers.update({ ...b, spaceId: other.id, arrivals: 1 }))).rejects.toThrow();
    expect(await store.read((tx) => tx.barriers.get(s.id, b.id))).toEqual(b);
  });

  it('forUpdate makes a second arrive on the same barrier wait for the first: no lost count', async () => {
    const { space: s } = await tenant();
    const b = await committed(s.id, { target: 10 });
    let releaseA!: () => void;
    const held = new Promise<void>((r) => (releaseA = r));
    let aLocked!: () => void;
    const locked = new Promise<void>((r) => (aLocked = r));
    const log: string[] = [];
    const countOne = (name: string, key: string, hold: boolean) =>
      store.transaction(async (tx) => {
        const row = (await tx.barriers.get(s.id, b.id, { forUpdate: true }))!;
        log.push(`${name} reads ${row.arrivals}`);
        if (hold) {
          aLocked();
          await held;
        }
        await tx.barriers.insertArrival(arrival(row, key));
        await tx.barriers.update({ ...row, arrivals: row.arrivals + 1 });
      });
    const a = countOne('A', 'a', true);
    await locked;
    const second = countOne('B', 'b', false);
    await sleep(200);
    log.push('A commits');
    releaseA();
    await Promise.all([a, second]);
    expect(log).toEqual(['A reads 0', 'A commits', 'B reads 1']);
    const after = (await store.read((tx) => tx.barriers.get(s.id, b.id)))!;
    expect(after.arrivals).toBe(2);
    expect(await store.read((tx) => tx.barriers.countArrivals(s.id, b.id, 1))).toBe(2);
  });

  if (target.name !== 'memory') {
    it('the database refuses a state that breaks the barrier invariants', async () => {
      const { space: s } = await tenant();
      const b = await committed(s.id, { target: 2 });
      for (const broken of [
        { ...b, arrivals: 3 },
        { ...b, arrivals: 2 },
        { ...b, state: 'RELEASED' as const, arrivals: 1, releasedAt: T0 },
        { ...b, state: 'RELEASED' as const, arrivals: 2, releasedAt: null },
      ]) {
        await expect(store.transaction((tx) => tx.barriers.update(broken))).rejects.toThrow();
      }
      expect(await store.read((tx) => tx.barriers.get(s.id, b.id))).toEqual(b);
    });
  }
});
