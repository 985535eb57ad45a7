import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvariantViolation, type CapacityRepository, type Org, type Pool, type Space, type Store, type Tx, type WorkLimit } from '@baton/core';
import { storeTargets } from './support/databases';

/**
 * Pools and work limits through the repository interfaces, on every store. A claim and a
 * release are each one atomic step: the memory store runs transactions one at a time, and on
 * PostgreSQL concurrent claims queue on the row and each re-checks what fits.
 */

const T0 = 1_700_000_000_123;
const jsOrder = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function pool(spaceId: string, overrides: Partial<Pool> = {}): Pool {
  return { id: randomUUID(), spaceId, name: `pool-${randomUUID()}`, capacity: 10, inUse: 0, createdAt: T0, updatedAt: T0, ...overrides };
}

function workLimit(spaceId: string, overrides: Partial<WorkLimit> = {}): WorkLimit {
  return { id: randomUUID(), spaceId, name: `limit-${randomUUID()}`, maxConcurrent: 10, inUse: 0, createdAt: T0, updatedAt: T0, ...overrides };
}

/** The two resources share one contract; each case runs on both. */
interface Kind<T extends Pool | WorkLimit> {
  name: string;
  repo(tx: Tx): CapacityRepository<T>;
  make(spaceId: string, overrides?: { name?: string; limit?: number; inUse?: number }): T;
}

const kinds = [
  {
    name: 'pools',
    repo: (tx: Tx) => tx.pools,
    make: (spaceId: string, o: { name?: string; limit?: number; inUse?: number } = {}) =>
      pool(spaceId, { ...(o.name === undefined ? {} : { name: o.name }), ...(o.limit === undefined ? {} : { capacity: o.limit }), inUse: o.inUse ?? 0 }),
  } satisfies Kind<Pool>,
  {
    name: 'work limits',
    repo: (tx: Tx) => tx.workLimits,
    make: (spaceId: string, o: { name?: string; limit?: number; inUse?: number } = {}) =>
      workLimit(spaceId, { ...(o.name === undefined ? {} : { name: o.name }), ...(o.limit === undefined ? {} : { maxConcurrent: o.limit }), inUse: o.inUse ?? 0 }),
  } satisfies Kind<WorkLimit>,
] as Kind<Pool | WorkLimit>[];

describe.each(storeTargets())('pool and work-limit store conformance on $name', (target) => {
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
    const o: Org = { id: randomUUID(), name: 'acme', plan: 'FREE', limits: null, createdAt: T0, updatedAt: T0 };
    const s: Space = { id: randomUUID(), orgId: o.id, name: 'default', limits: null, createdAt: T0, updatedAt: T0 };
    await store.transaction(async (tx) => {
      await tx.orgs.insert(o);
      await tx.spaces.insert(s);
    });
    return { org: o, space: s };
  }

  describe.each(kinds)('$name', (kind) => {
    async function committed(spaceId: string, overrides: { name?: string; limit?: number; inUse?: number } = {}): Promise<Pool | WorkLimit> {
      const row = kind.make(spaceId, overrides);
      expect(await store.transaction((tx) => kind.repo(tx).insert(row))).toBe(true);
      return row;
    }
    const claim = (spaceId: string, id: string, units: number, nowMs = T0 + 1) => store.transaction((tx) => kind.repo(tx).claim(spaceId, id, units, nowMs));
    const release = (spaceId: string, id: string, units: number, nowMs = T0 + 2) => store.transaction((tx) => kind.repo(tx).release(spaceId, id, units, nowMs));
    const read = (spaceId: string, id: string) => store.read((tx) => kind.repo(tx).get(spaceId, id));

    it('inserts, gets by id and by name', async () => {
      const { space: s } = await tenant();
      const row = await committed(s.id, { name: 'gpu', limit: 1_000_000 });
      expect(await read(s.id, row.id)).toEqual(row);
      expect(await store.read((tx) => kind.repo(tx).getByName(s.id, 'gpu'))).toEqual(row);
      expect(await store.read((tx) => kind.repo(tx).getByName(s.id, 'GPU'))).toBeUndefined();
      expect(await read(s.id, randomUUID())).toBeUndefined();
    });

    it('keeps names unique within a space: a second insert of the name writes nothing and says so', async () => {
      const { org: o, space: s } = await tenant();
      const other: Space = { id: randomUUID(), orgId: o.id, name: 'other', limits: null, createdAt: T0, updatedAt: T0 };
      await store.transaction((tx) => tx.spaces.insert(other));
      const first = await committed(s.id, { name: 'shared' });
      const second = kind.make(s.id, { name: 'shared', limit: 3 });
      expect(await store.transaction((tx) => kind.repo(tx).insert(second))).toBe(false);
      expect(await read(s.id, second.id)).toBeUndefined();
      expect(await store.read((tx) => kind.repo(tx).getByName(s.id, 'shared'))).toEqual(first);
      const elsewhere = await committed(other.id, { name: 'shared' });
      expect(await store.read((tx) => kind.repo(tx).getByName(other.id, 'shared'))).toEqual(elsewhere);
      // A duplicate id (not name) is a bug, and is refused.
      await expect(store.transaction((tx) => kind.repo(tx).insert({ ...first, name: 'renamed' }))).rejects.toThrow();
    });

    it('lists in name order, pages with an exclusive afterName, one space only', async () => {
      const { org: o, space: s } = await tenant();
      const names = ['delta', 'Alpha', 'alpha', 'beta', '_under', 'Zulu', 'a b', 'äpfel', 'a-b', '10', '9'];
      for (const name of names) await committed(s.id, { name });
      const other: Space = { id: randomUUID(), orgId: o.id, name: 'other', limits: null, createdAt: T0, updatedAt: T0 };
      await store.transaction((tx) => tx.spaces.insert(other));
      await committed(other.id, { name: 'b-other' });

      const expected = [...names].sort(jsOrder);
      expect((await store.read((tx) => kind.repo(tx).list(s.id, null, 100))).map((r) => r.name)).toEqual(expected);
      const paged: string[] = [];
      let after: string | null = null;
      for (;;) {
        const page: (Pool | WorkLimit)[] = await store.read((tx) => kind.repo(tx).list(s.id, after, 3));
        if (page.length === 0) break;
        expect(page.length).toBeLessThanOrEqual(3);
        paged.push(...page.map((r) => r.name));
        after = page.at(-1)!.name;
      }
      expect(paged).toEqual(expected);
      expect(await store.read((tx) => kind.repo(tx).list(s.id, expected.at(-1)!, 10))).toEqual([]);
    });

    it('claims units that fit and stamps updatedAt', async () => {
      const { space: s } = await tenant();
      const row = await committed(s.id, { limit: 10 });
      const claimed = await claim(s.id, row.id, 4, T0 + 50);
      expect(claimed).toEqual({ ...row, inUse: 4, updatedAt: T0 + 50 });
      expect(await read(s.id, row.id)).toEqual(claimed);
    });

    it('claims up to exactly the limit, and not one unit more', async () => {
      const { space: s } = await tenant();
      const row = await committed(s.id, { limit: 10 });
      expect((await claim(s.id, row.id, 7))?.inUse).toBe(7);
      expect((await claim(s.id, row.id, 3))?.inUse).toBe(10);
      expect(await claim(s.id, row.id, 1)).toBeUndefined();
      expect((await read(s.id, row.id))?.inUse).toBe(10);
    });

    it('a claim that does not fit changes nothing', async () => {
      const { space: s } = await tenant();
      const row = await committed(s.id, { limit: 5, inUse: 2 });
      expect(await claim(s.id, row.id, 4, T0 + 9)).toBeUndefined();
      expect(await claim(s.id, row.id, 1_000_000)).toBeUndefined();
      expect(await read(s.id, row.id)).toEqual(row);
    });

    it('a claim on an unknown id, or in another space, is undefined', async () => {
      const { space: s } = await tenant();
      const { space: elsewhere } = await tenant();
      const row = await committed(s.id);
      expect(await claim(s.id, randomUUID(), 1)).toBeUndefined();
      expect(await claim(elsewhere.id, row.id, 1)).toBeUndefined();
      expect(await read(s.id, row.id)).toEqual(row);
    });

    it('releases units and stamps updatedAt', async () => {
      const { space: s } = await tenant();
      const row = await committed(s.id, { limit: 10, inUse: 6 });
      expect(await release(s.id, row.id, 4, T0 + 70)).toEqual({ ...row, inUse: 2, updatedAt: T0 + 70 });
      expect((await release(s.id, row.id, 2))?.inUse).toBe(0);
      expect((await claim(s.id, row.id, 10))?.inUse).toBe(10);
    });

    it('releasing more than is in use, or from an unknown id, is an invariant violation that changes nothing', async () => {
      const { space: s } = await tenant();
      const row = await committed(s.id, { limit: 10, inUse: 3 });
      await expect(release(s.id, row.id, 4)).rejects.toThrow(InvariantViolation);
      await expect(release(s.id, randomUUID(), 1)).rejects.toThrow(InvariantViolation);
      expect(await read(s.id, row.id)).toEqual(row);
    });

    it.each([0, -1, 1.5, 1_000_001, Number.NaN])('refuses %s units as a bug before touching the store', async (units) => {
      const { space: s } = await tenant();
      const row = await committed(s.id, { limit: 10, inUse: 5 });
      await expect(claim(s.id, row.id, units)).rejects.toThrow(InvariantViolation);
      await expect(release(s.id, row.id, units)).rejects.toThrow(InvariantViolation);
      expect(await read(s.id, row.id)).toEqual(row);
    });

    it('refuses to insert a row outside 0 <= inUse <= limit', async () => {
      const { space: s } = await tenant();
      await expect(store.transaction((tx) => kind.repo(tx).insert(kind.make(s.id, { limit: 2, inUse: 3 })))).rejects.toThrow();
      await expect(store.transaction((tx) => kind.repo(tx).insert(kind.make(s.id, { limit: 2, inUse: -1 })))).rejects.toThrow();
      expect(await store.read((tx) => kind.repo(tx).list(s.id, null, 10))).toEqual([]);
    });

    it('a claim rolls back with its transaction', async () => {
      const { space: s } = await tenant();
      const row = await committed(s.id, { limit: 10 });
      await expect(
        store.transaction(async (tx) => {
          expect((await kind.repo(tx).claim(s.id, row.id, 5, T0 + 1))?.inUse).toBe(5);
          throw new Error('admission failed later');
        }),
      ).rejects.toThrow('admission failed later');
      expect(await read(s.id, row.id)).toEqual(row);
    });

    it('50 concurrent one-unit claims on capacity 10: exactly 10 succeed, and releases bring it back to 0', async () => {
      const { space: s } = await tenant();
      const row = await committed(s.id, { limit: 10 });
      // Each claim is its own transaction that stays open a moment after claiming, so on
      // PostgreSQL the others meet its row lock; memory and PGlite run them one by one.
      const attempts = Array.from({ length: 50 }, (_, i) =>
        store.transaction(async (tx) => {
          const claimed = await kind.repo(tx).claim(s.id, row.id, 1, T0 + i);
          await new Promise((r) => setTimeout(r, 2));
          return claimed;
        }),
      );
      const results = await Promise.all(attempts);
      const won = results.filter((r) => r !== undefined);
      expect(won).toHaveLength(10);
      expect(won.map((r) => r.inUse).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      expect((await read(s.id, row.id))?.inUse).toBe(10);

      const releases = await Promise.all(won.map((_, i) => release(s.id, row.id, 1, T0 + 100 + i)));
      expect(releases.map((r) => r.inUse).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect((await read(s.id, row.id))?.inUse).toBe(0);
    });

    it('concurrent claims of mixed sizes never pass the limit', async () => {
      const { space: s } = await tenant();
      const row = await committed(s.id, { limit: 10 });
      const sizes = Array.from({ length: 30 }, (_, i) => 1 + (i % 4));
      const results = await Promise.all(sizes.map((units) => claim(s.id, row.id, units)));
      const claimedUnits = sizes.reduce((sum, units, i) => (results[i] ? sum + units : sum), 0);
      expect(claimedUnits).toBeLessThanOrEqual(10);
      expect((await read(s.id, row.id))?.inUse).toBe(claimedUnits);
      // Greedy either way: once a claim fails, no unit that was left could have fit it.
      const left = 10 - claimedUnits;
      sizes.forEach((units, i) => {
        if (!results[i]) expect(units).toBeGreaterThan(left);
      });
    });
  });
});
