import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApiKey, Budget, BudgetEntry, IdempotencyRecord, JournalEvent, NewEvent, Org, Reservation, Space, Store } from '@baton/core';
import { storeTargets } from './support/databases';

/**
 * One suite, every store: the memory store (the reference), PGlite and PostgreSQL must behave
 * alike through the repository interfaces of core/src/store/repositories.ts. Where they
 * legitimately differ (memory and PGlite run transactions one at a time, PostgreSQL runs them
 * side by side) a test states the outcome for each and checks the one of its target.
 */

const T0 = 1_700_000_000_123;
const max18 = 999_999_999_999_999_999n;

function org(overrides: Partial<Org> = {}): Org {
  return { id: randomUUID(), name: 'acme', plan: 'FREE', limits: null, createdAt: T0, updatedAt: T0, ...overrides };
}

function space(orgId: string, overrides: Partial<Space> = {}): Space {
  return { id: randomUUID(), orgId, name: 'default', limits: null, createdAt: T0, updatedAt: T0, ...overrides };
}

function apiKey(orgId: string, overrides: Partial<ApiKey> = {}): ApiKey {
  return {
    id: randomUUID(),
    orgId,
    name: 'ci',
    secretHash: 'ab'.repeat(32),
    permissions: ['coordination_read', 'coordination_write'],
    spaceIds: null,
    createdAt: T0,
    revokedAt: null,
    ...overrides,
  };
}

function budget(spaceId: string, overrides: Partial<Budget> = {}): Budget {
  return {
    id: randomUUID(),
    spaceId,
    name: `budget-${randomUUID()}`,
    currency: 'USD',
    scale: 2,
    limitMinor: 100n,
    availableMinor: 100n,
    reservedMinor: 0n,
    settledMinor: 0n,
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  };
}

function reservation(b: Budget, overrides: Partial<Reservation> = {}): Reservation {
  return {
    id: randomUUID(),
    spaceId: b.spaceId,
    budgetId: b.id,
    scopeId: randomUUID(),
    holder: 'worker-1',
    amountMinor: 10n,
    settledMinor: 0n,
    remainingMinor: 10n,
    state: 'ACTIVE',
    settleBy: null,
    overdueAt: null,
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  };
}

function entry(r: Reservation, overrides: Partial<BudgetEntry> = {}): BudgetEntry {
  return {
    id: randomUUID(),
    spaceId: r.spaceId,
    budgetId: r.budgetId,
    reservationId: r.id,
    kind: 'SETTLE',
    amountMinor: 4n,
    workKey: `work-${randomUUID()}`,
    createdAt: T0,
    ...overrides,
  };
}

function event(aggregateId: string, overrides: Partial<NewEvent> = {}): NewEvent {
  return { type: 'budget.created', aggregateType: 'budget', aggregateId, scopeId: null, data: { n: 1 }, ...overrides };
}

function record(spaceId: string, key: string, overrides: Partial<IdempotencyRecord> = {}): IdempotencyRecord {
  return { spaceId, key, fingerprint: 'f1', statusCode: 201, body: { id: 'x', nested: { list: [1, 'two', null] } }, createdAt: T0, ...overrides };
}

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const sleep = (ms: number): Promise<'slept'> => new Promise((r) => setTimeout(() => r('slept'), ms));

/** JS string order: the order the memory store sorts in, and so the order every store must give. */
const jsOrder = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

describe.each(storeTargets())('store conformance on $name', (target) => {
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

  /** An org and a space in it, committed. */
  async function tenant(): Promise<{ org: Org; space: Space }> {
    const o = org();
    const s = space(o.id);
    await store.transaction(async (tx) => {
      await tx.orgs.insert(o);
      await tx.spaces.insert(s);
    });
    return { org: o, space: s };
  }

  async function committedBudget(spaceId: string, overrides: Partial<Budget> = {}): Promise<Budget> {
    const b = budget(spaceId, overrides);
    await store.transaction((tx) => tx.budgets.insert(b));
    return b;
  }

  /**
   * The journal once every event committed so far is visible. On PostgreSQL a commit becomes
   * visible to readers only when every older transaction that writes has ended, anywhere on
   * the server (other test files run beside this one), so reads poll for what they expect.
   */
  async function visibleJournal(spaceId: string, count: number, after = '0'): Promise<JournalEvent[]> {
    await expect.poll(async () => (await store.read((tx) => tx.events.listAfter(spaceId, after, 1000))).length, { timeout: 10_000, interval: 10 }).toBe(count);
    return store.read((tx) => tx.events.listAfter(spaceId, after, 1000));
  }

  it('reports its kind', () => {
    expect(store.kind).toBe(target.name);
  });

  describe('orgs', () => {
    it('inserts, gets, updates and counts', async () => {
      const a = org({ limits: { operationsPerMonth: 5_000_000, payloadBytes: 1_048_576, spaces: null } });
      const b = org({ plan: 'ENTERPRISE' });
      await store.transaction(async (tx) => {
        expect(await tx.orgs.count()).toBe(0);
        await tx.orgs.insert(a);
        await tx.orgs.insert(b);
      });
      expect(await store.read((tx) => tx.orgs.get(a.id))).toEqual(a);
      expect(await store.read((tx) => tx.orgs.get(randomUUID()))).toBeUndefined();

      const changed: Org = { ...b, name: 'renamed', plan: 'SCALE', limits: { retentionDays: 90 }, updatedAt: T0 + 5 };
      await store.transaction((tx) => tx.orgs.update(changed));
      expect(await store.read((tx) => tx.orgs.get(b.id))).toEqual(changed);
      expect(await store.read((tx) => tx.orgs.count())).toBe(2);
    });

    it('refuses a duplicate id and an update of a missing org', async () => {
      const a = org();
      await store.transaction((tx) => tx.orgs.insert(a));
      await expect(store.transaction((tx) => tx.orgs.insert({ ...a, name: 'again' }))).rejects.toThrow();
      await expect(store.transaction((tx) => tx.orgs.update(org()))).rejects.toThrow();
      expect(await store.read((tx) => tx.orgs.get(a.id))).toEqual(a);
    });
  });

  describe('spaces', () => {
    it('inserts, gets and counts by org', async () => {
      const { org: o, space: s } = await tenant();
      const other = org();
      const second = space(o.id, { name: 'second' });
      await store.transaction(async (tx) => {
        await tx.orgs.insert(other);
        await tx.spaces.insert(second);
        await tx.spaces.insert(space(other.id));
      });
      expect(await store.read((tx) => tx.spaces.get(s.id))).toEqual(s);
      expect(await store.read((tx) => tx.spaces.get(randomUUID()))).toBeUndefined();
      expect(await store.read((tx) => tx.spaces.countByOrg(o.id))).toBe(2);
      expect(await store.read((tx) => tx.spaces.countByOrg(other.id))).toBe(1);
      await expect(store.transaction((tx) => tx.spaces.insert(s))).rejects.toThrow();
    });
  });

  describe('api keys', () => {
    it('inserts, gets, revokes and counts the active ones', async () => {
      const { org: o, space: s } = await tenant();
      const all = apiKey(o.id, { permissions: ['coordination_read', 'coordination_write', 'resource_config', 'usage_read'] });
      const scoped = apiKey(o.id, { spaceIds: [s.id, randomUUID()], permissions: [] });
      await store.transaction(async (tx) => {
        await tx.apiKeys.insert(all);
        await tx.apiKeys.insert(scoped);
      });
      expect(await store.read((tx) => tx.apiKeys.get(all.id))).toEqual(all);
      expect(await store.read((tx) => tx.apiKeys.get(scoped.id))).toEqual(scoped);
      expect(await store.read((tx) => tx.apiKeys.countActiveByOrg(o.id))).toBe(2);

      await store.transaction((tx) => tx.apiKeys.update({ ...scoped, revokedAt: T0 + 1 }));
      expect(await store.read((tx) => tx.apiKeys.get(scoped.id))).toEqual({ ...scoped, revokedAt: T0 + 1 });
      expect(await store.read((tx) => tx.apiKeys.countActiveByOrg(o.id))).toBe(1);
      await expect(store.transaction((tx) => tx.apiKeys.update(apiKey(o.id)))).rejects.toThrow();
    });
  });

  describe('budgets', () => {
    it('inserts, gets by id and by name, and updates', async () => {
      const { space: s } = await tenant();
      const b = await committedBudget(s.id, { name: 'compute' });
      expect(await store.read((tx) => tx.budgets.get(s.id, b.id))).toEqual(b);
      expect(await store.transaction((tx) => tx.budgets.get(s.id, b.id, { forUpdate: true }))).toEqual(b);
      expect(await store.read((tx) => tx.budgets.getByName(s.id, 'compute'))).toEqual(b);
      expect(await store.read((tx) => tx.budgets.getByName(s.id, 'Compute'))).toBeUndefined();
      expect(await store.read((tx) => tx.budgets.get(s.id, randomUUID()))).toBeUndefined();

      const next: Budget = { ...b, availableMinor: 60n, reservedMinor: 30n, settledMinor: 10n, updatedAt: T0 + 7 };
      await store.transaction((tx) => tx.budgets.update(next));
      expect(await store.read((tx) => tx.budgets.get(s.id, b.id))).toEqual(next);
      await expect(store.transaction((tx) => tx.budgets.update(budget(s.id)))).rejects.toThrow();
    });

    it('reserve moves funds from available to reserved; one the budget no longer covers loses the race and runs again', async () => {
      const { space: s } = await tenant();
      const b = await committedBudget(s.id, { limitMinor: 100n, availableMinor: 100n });
      await store.transaction((tx) => tx.budgets.reserve(s.id, b.id, 70n, T0 + 5));
      expect(await store.read((tx) => tx.budgets.get(s.id, b.id))).toMatchObject({ availableMinor: 30n, reservedMinor: 70n, settledMinor: 0n, updatedAt: T0 + 5 });
      let attempts = 0;
      await store.transaction(async (tx) => {
        attempts += 1;
        // As a reserve that read 100 available before a concurrent one took 70: only 30 are left.
        if (attempts === 1) await tx.budgets.reserve(s.id, b.id, 40n, T0 + 6);
        return tx.budgets.get(s.id, b.id);
      });
      expect(attempts).toBe(2);
      expect(await store.read((tx) => tx.budgets.get(s.id, b.id))).toMatchObject({ availableMinor: 30n, reservedMinor: 70n });
    });

    it('concurrent reserves on one budget each move their funds once, and never below zero', async () => {
      const { space: s } = await tenant();
      const b = await committedBudget(s.id, { limitMinor: 100n, availableMinor: 100n });
      const outcomes = await Promise.allSettled(Array.from({ length: 20 }, () => store.transaction((tx) => tx.budgets.reserve(s.id, b.id, 7n, T0 + 1))));
      const after = (await store.read((tx) => tx.budgets.get(s.id, b.id)))!;
      const done = outcomes.filter((o) => o.status === 'fulfilled').length;
      // 14 fit in 100; the rest kept losing races (nothing to read again here) and answered CONFLICT.
      expect(done).toBe(14);
      expect(outcomes.filter((o) => o.status === 'rejected').every((o) => (o as PromiseRejectedResult).reason.code === 'CONFLICT')).toBe(true);
      expect([after.availableMinor, after.reservedMinor]).toEqual([2n, 98n]);
    });

    it('keeps names unique within a space, not across spaces', async () => {
      const { org: o, space: s } = await tenant();
      const other = space(o.id);
      await store.transaction((tx) => tx.spaces.insert(other));
      await committedBudget(s.id, { name: 'shared' });
      await expect(committedBudget(s.id, { name: 'shared' })).rejects.toThrow();
      const elsewhere = await committedBudget(other.id, { name: 'shared' });
      expect(await store.read((tx) => tx.budgets.getByName(other.id, 'shared'))).toEqual(elsewhere);
    });

    it('lists in name order, pages with an exclusive afterName', async () => {
      const { org: o, space: s } = await tenant();
      // Case, punctuation, a space and non-ASCII: any collation but byte order would disagree.
      const names = ['delta', 'Alpha', 'alpha', 'beta', '_under', 'Zulu', 'a b', 'äpfel', 'a-b', '10', '9'];
      for (const name of names) await committedBudget(s.id, { name });
      const other = space(o.id);
      await store.transaction((tx) => tx.spaces.insert(other));
      await committedBudget(other.id, { name: 'b-other' });

      const expected = [...names].sort(jsOrder);
      const firstPage = await store.read((tx) => tx.budgets.list(s.id, null, 100));
      expect(firstPage.map((b) => b.name)).toEqual(expected);

      const paged: string[] = [];
      let after: string | null = null;
      for (;;) {
        const page: Budget[] = await store.read((tx) => tx.budgets.list(s.id, after, 3));
        expect(page.length).toBeLessThanOrEqual(3);
        if (page.length === 0) break;
        paged.push(...page.map((b) => b.name));
        after = page.at(-1)!.name;
      }
      expect(paged).toEqual(expected);
      expect((await store.read((tx) => tx.budgets.list(s.id, 'alpha', 2))).map((b) => b.name)).toEqual(expected.filter((n) => n > 'alpha').slice(0, 2));
      expect(await store.read((tx) => tx.budgets.list(s.id, expected.at(-1)!, 10))).toEqual([]);
    });

    it('round-trips 18-digit amounts exactly', async () => {
      const { space: s } = await tenant();
      const b = await committedBudget(s.id, { limitMinor: max18, availableMinor: max18 - 123_456_789_012_345_678n - 1n, reservedMinor: 123_456_789_012_345_678n, settledMinor: 1n });
      const r = reservation(b, { amountMinor: max18, settledMinor: max18 - 1n, remainingMinor: 1n });
      const e = entry(r, { amountMinor: max18 });
      await store.transaction(async (tx) => {
        await tx.reservations.insert(r);
        await tx.budgetEntries.insert(e);
      });
      const [gotB, gotR, gotE] = await store.read((tx) =>
        Promise.all([tx.budgets.get(s.id, b.id), tx.reservations.get(s.id, r.id), tx.budgetEntries.getByWorkKey(s.id, b.id, e.workKey)]),
      );
      expect(gotB).toEqual(b);
      expect(gotR).toEqual(r);
      expect(gotE).toEqual(e);
      expect(typeof gotB!.limitMinor).toBe('bigint');
      expect(gotB!.limitMinor).toBe(999_999_999_999_999_999n);
      expect(typeof gotR!.remainingMinor).toBe('bigint');
    });
  });

  describe('reservations', () => {
    it('inserts, gets, updates and lists the ACTIVE ones oldest first', async () => {
      const { space: s } = await tenant();
      const b = await committedBudget(s.id);
      const otherBudget = await committedBudget(s.id);
      // Equal createdAt falls back to id order.
      const rs = [
        reservation(b, { createdAt: T0 + 30 }),
        reservation(b, { createdAt: T0 + 10, settleBy: T0 + 60_000 }),
        reservation(b, { createdAt: T0 + 20, id: `b-${randomUUID()}` }),
        reservation(b, { createdAt: T0 + 20, id: `a-${randomUUID()}` }),
        reservation(b, { state: 'SETTLED', settledMinor: 10n, remainingMinor: 0n }),
        reservation(otherBudget),
      ];
      await store.transaction(async (tx) => {
        for (const r of rs) await tx.reservations.insert(r);
      });
      expect(await store.read((tx) => tx.reservations.get(s.id, rs[1]!.id))).toEqual(rs[1]);
      expect(await store.transaction((tx) => tx.reservations.get(s.id, rs[1]!.id, { forUpdate: true }))).toEqual(rs[1]);
      expect(await store.read((tx) => tx.reservations.get(s.id, randomUUID()))).toBeUndefined();

      const active = await store.read((tx) => tx.reservations.listActive(s.id, b.id));
      expect(active.map((r) => r.id)).toEqual([rs[1]!.id, rs[3]!.id, rs[2]!.id, rs[0]!.id]);

      const voided: Reservation = { ...rs[0]!, state: 'VOIDED', remainingMinor: 0n, overdueAt: T0 + 99, updatedAt: T0 + 100 };
      await store.transaction((tx) => tx.reservations.update(voided));
      expect(await store.read((tx) => tx.reservations.get(s.id, voided.id))).toEqual(voided);
      expect((await store.read((tx) => tx.reservations.listActive(s.id, b.id))).map((r) => r.id)).toEqual([rs[1]!.id, rs[3]!.id, rs[2]!.id]);
      await expect(store.transaction((tx) => tx.reservations.update(reservation(b)))).rejects.toThrow();
    });

    it('claimOverdue returns ACTIVE, not yet flagged reservations due by now, across spaces, in settleBy order', async () => {
      const { org: o, space: s } = await tenant();
      const s2 = space(o.id);
      await store.transaction((tx) => tx.spaces.insert(s2));
      const b = await committedBudget(s.id);
      const b2 = await committedBudget(s2.id);
      const due3 = reservation(b, { settleBy: T0 + 3000 });
      const due1 = reservation(b2, { settleBy: T0 + 1000 });
      const due2 = reservation(b, { settleBy: T0 + 2000 });
      const atNow = reservation(b, { settleBy: T0 + 5000 });
      const notDue = reservation(b, { settleBy: T0 + 5001 });
      const noDeadline = reservation(b);
      const flagged = reservation(b, { settleBy: T0 + 500, overdueAt: T0 + 600 });
      const settled = reservation(b, { settleBy: T0 + 500, state: 'SETTLED', settledMinor: 10n, remainingMinor: 0n });
      await store.transaction(async (tx) => {
        for (const r of [due3, due1, due2, atNow, notDue, noDeadline, flagged, settled]) await tx.reservations.insert(r);
      });

      const claimed = await store.transaction((tx) => tx.reservations.claimOverdue(T0 + 5000, 10));
      expect(claimed.map((r) => r.id)).toEqual([due1.id, due2.id, due3.id, atNow.id]);
      expect(claimed[0]).toEqual(due1);
      const limited = await store.transaction((tx) => tx.reservations.claimOverdue(T0 + 5000, 2));
      expect(limited.map((r) => r.id)).toEqual([due1.id, due2.id]);

      await store.transaction(async (tx) => {
        for (const r of limited) await tx.reservations.update({ ...r, overdueAt: T0 + 5000 });
      });
      expect((await store.transaction((tx) => tx.reservations.claimOverdue(T0 + 5000, 10))).map((r) => r.id)).toEqual([due3.id, atNow.id]);
    });

    it('claimOverdue passes over rows another sweeper holds', async () => {
      const { space: s } = await tenant();
      const b = await committedBudget(s.id);
      const first = reservation(b, { settleBy: T0 + 1000 });
      const second = reservation(b, { settleBy: T0 + 2000 });
      await store.transaction(async (tx) => {
        await tx.reservations.insert(first);
        await tx.reservations.insert(second);
      });
      const now = T0 + 10_000;
      const log: string[] = [];
      const aClaimed = deferred();
      const releaseA = deferred();
      const sweep = (name: string, limit: number, hold?: Deferred) =>
        store.transaction(async (tx) => {
          const rows = await tx.reservations.claimOverdue(now, limit);
          if (hold) {
            aClaimed.resolve();
            await hold.promise;
          }
          for (const r of rows) await tx.reservations.update({ ...r, overdueAt: now });
          log.push(`${name} ${rows.map((r) => (r.id === first.id ? 'first' : 'second')).join(',')}`);
        });
      const a = sweep('A', 1, releaseA);
      await aClaimed.promise;
      const b2 = sweep('B', 10);
      // PostgreSQL: B skips A's locked row and finishes while A is open. Memory and PGlite:
      // B starts only once A has committed, and A's flag takes its row out of the sweep.
      const bFirst = await Promise.race([b2.then(() => 'B done' as const), sleep(300)]);
      releaseA.resolve();
      await Promise.all([a, b2]);
      expect(bFirst).toBe(target.concurrentTransactions ? 'B done' : 'slept');
      expect(log).toEqual(target.concurrentTransactions ? ['B second', 'A first'] : ['A first', 'B second']);
      expect(await store.transaction((tx) => tx.reservations.claimOverdue(now, 10))).toEqual([]);
    });
  });

  describe('budget entries', () => {
    it('inserts and finds by workKey within a budget; a workKey is unique per budget', async () => {
      const { space: s } = await tenant();
      const b = await committedBudget(s.id);
      const other = await committedBudget(s.id);
      const r = reservation(b);
      const r2 = reservation(other);
      const settle = entry(r, { workKey: 'wk-1' });
      const voidEntry = entry(r2, { workKey: 'wk-1', kind: 'VOID', amountMinor: 0n });
      await store.transaction(async (tx) => {
        await tx.reservations.insert(r);
        await tx.reservations.insert(r2);
        await tx.budgetEntries.insert(settle);
        await tx.budgetEntries.insert(voidEntry);
      });
      expect(await store.read((tx) => tx.budgetEntries.getByWorkKey(s.id, b.id, 'wk-1'))).toEqual(settle);
      expect(await store.read((tx) => tx.budgetEntries.getByWorkKey(s.id, other.id, 'wk-1'))).toEqual(voidEntry);
      expect(await store.read((tx) => tx.budgetEntries.getByWorkKey(s.id, b.id, 'wk-2'))).toBeUndefined();
      await expect(store.transaction((tx) => tx.budgetEntries.insert(entry(r, { workKey: 'wk-1' })))).rejects.toThrow();
    });
  });

  describe('events', () => {
    it('appends and lists in order with every field, paging by the last eventId', async () => {
      const { space: s } = await tenant();
      const scope = randomUUID();
      const batch1 = [
        event('b1', { data: { name: 'compute', limitMinor: '999999999999999999', nested: { list: [1, 'two', null, { deep: true }] }, text: 'zürich ✓' } }),
        event('b1', { type: 'budget.reserved', scopeId: scope, data: {} }),
      ];
      const batch2 = [event('b2', { type: 'budget.settled', aggregateType: 'budget' })];
      await store.transaction((tx) => tx.events.append(s.id, T0 + 1, batch1));
      await store.transaction(async (tx) => {
        await tx.events.append(s.id, T0 + 2, []);
        await tx.events.append(s.id, T0 + 2, batch2);
      });

      const all = await visibleJournal(s.id, 3);
      expect(all.map(({ eventId: _, ...rest }) => rest)).toEqual([
        { ...batch1[0], spaceId: s.id, occurredAt: T0 + 1 },
        { ...batch1[1], spaceId: s.id, occurredAt: T0 + 1 },
        { ...batch2[0], spaceId: s.id, occurredAt: T0 + 2 },
      ]);
      const ids = all.map((e) => e.eventId);
      for (const id of ids) expect(id).toMatch(/^\d+$/);
      for (let i = 1; i < ids.length; i++) expect(BigInt(ids[i]!) > BigInt(ids[i - 1]!)).toBe(true);

      const page1 = await store.read((tx) => tx.events.listAfter(s.id, '0', 2));
      const page2 = await store.read((tx) => tx.events.listAfter(s.id, page1.at(-1)!.eventId, 2));
      expect([...page1, ...page2]).toEqual(all);
      expect(await store.read((tx) => tx.events.listAfter(s.id, ids.at(-1)!, 10))).toEqual([]);

      await store.transaction((tx) => tx.events.append(s.id, T0 + 3, [event('b3')]));
      const later = await visibleJournal(s.id, 1, ids.at(-1)!);
      expect(later.map((e) => e.aggregateId)).toEqual(['b3']);
    });

    it('tail: a reader following from it sees what commits later and nothing before ("0" on an empty journal)', async () => {
      const { space: s } = await tenant();
      const empty = await store.read((tx) => tx.events.tail(s.id));
      // Memory ids are global, so an empty space's tail may be past other spaces' events; never past its own.
      await store.transaction((tx) => tx.events.append(s.id, T0 + 1, [event('before')]));
      const seen = await visibleJournal(s.id, 1, empty);
      expect(seen.map((e) => e.aggregateId)).toEqual(['before']);
      // Wait until the append is visible (PostgreSQL's horizon), then take the tail past it.
      await visibleJournal(s.id, 1);
      const tail = await store.read((tx) => tx.events.tail(s.id));
      expect(await store.read((tx) => tx.events.listAfter(s.id, tail, 10))).toEqual([]);
      await store.transaction((tx) => tx.events.append(s.id, T0 + 2, [event('after')]));
      expect((await visibleJournal(s.id, 1, tail)).map((e) => e.aggregateId)).toEqual(['after']);
    });
  });

  describe('idempotency', () => {
    it('puts and gets a record exactly, and replaces it on a second put', async () => {
      const { space: s } = await tenant();
      expect(await store.read((tx) => tx.idempotency.get(s.id, 'k1'))).toBeUndefined();
      const first = record(s.id, 'k1', { body: { z: 1, a: [true, { y: 'x', b: null }], m: 'ü' } });
      await store.transaction((tx) => tx.idempotency.put(first));
      const got = await store.read((tx) => tx.idempotency.get(s.id, 'k1'));
      expect(got).toEqual(first);
      // A replay returns the first reply as it was: key order included.
      expect(JSON.stringify(got!.body)).toBe(JSON.stringify(first.body));

      const replacement = record(s.id, 'k1', { fingerprint: 'f2', statusCode: 409, body: { error: { code: 'INSUFFICIENT_BUDGET' } }, createdAt: T0 + 86_400_001 });
      await store.transaction((tx) => tx.idempotency.put(replacement));
      expect(await store.read((tx) => tx.idempotency.get(s.id, 'k1'))).toEqual(replacement);
    });

    it('purgeUntil deletes records created at or before the cutoff, in batches of at most limit, and no younger ones', async () => {
      const { space: s } = await tenant();
      const old = [1, 2, 3].map((i) => record(s.id, `old-${i}`, { createdAt: T0 - i }));
      const young = record(s.id, 'young', { createdAt: T0 + 1 });
      const atCutoff = record(s.id, 'at-cutoff', { createdAt: T0 });
      for (const r of [...old, young, atCutoff]) await store.transaction((tx) => tx.idempotency.put(r));
      // Other tests' records are older still, so count only this space's.
      const left = async () => (await Promise.all([...old, young, atCutoff].map((r) => store.read((tx) => tx.idempotency.get(s.id, r.key))))).filter(Boolean).length;
      let purged = 0;
      for (let n; (n = await store.transaction((tx) => tx.idempotency.purgeUntil(T0, 2))) > 0; purged += n) expect(n).toBeLessThanOrEqual(2);
      expect(purged).toBeGreaterThanOrEqual(4);
      expect(await left()).toBe(1);
      expect(await store.read((tx) => tx.idempotency.get(s.id, 'young'))).toEqual(young);
    });

    it('tryLock refuses a key while another open transaction holds it', async () => {
      const { org: o, space: s } = await tenant();
      const s2 = space(o.id);
      await store.transaction((tx) => tx.spaces.insert(s2));
      const log: string[] = [];
      const aHolds = deferred();
      const releaseA = deferred();
      const a = store.transaction(async (tx) => {
        log.push(`A ${await tx.idempotency.tryLock(s.id, 'k')}`);
        log.push(`A again ${await tx.idempotency.tryLock(s.id, 'k')}`);
        aHolds.resolve();
        await releaseA.promise;
        log.push('A ends');
      });
      await aHolds.promise;
      const b = store.transaction(async (tx) => {
        const same = await tx.idempotency.tryLock(s.id, 'k');
        const otherKey = await tx.idempotency.tryLock(s.id, 'k2');
        const otherSpace = await tx.idempotency.tryLock(s2.id, 'k');
        log.push(`B ${same} ${otherKey} ${otherSpace}`);
      });
      // PostgreSQL: B answers at once, refused. Memory and PGlite: B waits for A to end.
      const bFirst = await Promise.race([b.then(() => 'B done' as const), sleep(300)]);
      releaseA.resolve();
      await Promise.all([a, b]);
      expect(bFirst).toBe(target.concurrentTransactions ? 'B done' : 'slept');
      expect(log).toEqual(
        target.concurrentTransactions ? ['A true', 'A again true', 'B false true true', 'A ends'] : ['A true', 'A again true', 'A ends', 'B true true true'],
      );
      // The lock ends with its transaction, also when that transaction fails.
      await expect(
        store.transaction(async (tx) => {
          expect(await tx.idempotency.tryLock(s.id, 'k')).toBe(true);
          throw new Error('request failed');
        }),
      ).rejects.toThrow('request failed');
      expect(await store.transaction((tx) => tx.idempotency.tryLock(s.id, 'k'))).toBe(true);
    });
  });

  describe('transactions', () => {
    it('roll back everything, events and idempotency records included, when the work throws', async () => {
      const { space: s } = await tenant();
      const existing = await committedBudget(s.id, { name: 'existing' });
      const fresh = budget(s.id, { name: 'fresh' });
      const r = reservation(existing);
      const failure = new Error('boom');
      const attempt = store.transaction(async (tx) => {
        await tx.budgets.insert(fresh);
        await tx.budgets.update({ ...existing, availableMinor: 90n, reservedMinor: 10n });
        await tx.reservations.insert(r);
        await tx.budgetEntries.insert(entry(r, { workKey: 'wk' }));
        await tx.events.append(s.id, T0, [event(fresh.id), event(existing.id)]);
        await tx.idempotency.put(record(s.id, 'req-1'));
        throw failure;
      });
      await expect(attempt).rejects.toBe(failure);

      await store.read(async (tx) => {
        expect(await tx.budgets.get(s.id, fresh.id)).toBeUndefined();
        expect(await tx.budgets.get(s.id, existing.id)).toEqual(existing);
        expect(await tx.reservations.get(s.id, r.id)).toBeUndefined();
        expect(await tx.budgetEntries.getByWorkKey(s.id, existing.id, 'wk')).toBeUndefined();
        expect(await tx.events.listAfter(s.id, '0', 10)).toEqual([]);
        expect(await tx.idempotency.get(s.id, 'req-1')).toBeUndefined();
      });

      // The store is still usable, and the journal shows only what committed.
      await store.transaction((tx) => tx.events.append(s.id, T0 + 1, [event('after')]));
      expect((await visibleJournal(s.id, 1)).map((e) => e.aggregateId)).toEqual(['after']);
    });

    it('return the value of the work', async () => {
      expect(await store.transaction(async () => 42)).toBe(42);
      expect(await store.read(async (tx) => tx.orgs.count())).toBe(0);
    });

    it('forUpdate makes a second transaction on the same budget wait for the first', async () => {
      const { space: s } = await tenant();
      const b = await committedBudget(s.id);
      const log: string[] = [];
      const aLocked = deferred();
      const releaseA = deferred();
      const spend = (name: string, amount: bigint, hold?: Deferred) =>
        store.transaction(async (tx) => {
          const row = (await tx.budgets.get(s.id, b.id, { forUpdate: true }))!;
          log.push(`${name} reads ${row.availableMinor}`);
          if (hold) {
            aLocked.resolve();
            await hold.promise;
          }
          await tx.budgets.update({ ...row, availableMinor: row.availableMinor - amount, settledMinor: row.settledMinor + amount });
        });
      const a = spend('A', 5n, releaseA);
      await aLocked.promise;
      const second = spend('B', 3n);
      await sleep(200);
      log.push('A released');
      releaseA.resolve();
      await Promise.all([a, second]);
      // B read only after A committed, so it saw A's write: no lost update.
      expect(log).toEqual(['A reads 100', 'A released', 'B reads 95']);
      expect((await store.read((tx) => tx.budgets.get(s.id, b.id)))!.availableMinor).toBe(92n);
    });

    it('serialise many concurrent read-modify-write transactions under forUpdate', async () => {
      const { space: s } = await tenant();
      const b = await committedBudget(s.id, { limitMinor: 1000n, availableMinor: 1000n });
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          store.transaction(async (tx) => {
            const row = (await tx.budgets.get(s.id, b.id, { forUpdate: true }))!;
            await sleep(i % 3);
            await tx.budgets.update({ ...row, availableMinor: row.availableMinor - 7n, settledMinor: row.settledMinor + 7n });
          }),
        ),
      );
      const after = (await store.read((tx) => tx.budgets.get(s.id, b.id)))!;
      expect([after.availableMinor, after.settledMinor]).toEqual([860n, 140n]);
    });

    it('read() sees what is committed, not what an open transaction has written', async () => {
      const { space: s } = await tenant();
      const b = budget(s.id);
      const written = deferred();
      const releaseA = deferred();
      const a = store.transaction(async (tx) => {
        await tx.budgets.insert(b);
        written.resolve();
        await releaseA.promise;
      });
      await written.promise;
      const reading = store.read((tx) => tx.budgets.get(s.id, b.id));
      // PostgreSQL answers at once without the row; memory and PGlite answer after the commit, with it.
      const early = await Promise.race([reading, sleep(300)]);
      releaseA.resolve();
      await a;
      expect(early).toEqual(target.concurrentTransactions ? undefined : 'slept');
      expect(await reading).toEqual(target.concurrentTransactions ? undefined : b);
      expect(await store.read((tx) => tx.budgets.get(s.id, b.id))).toEqual(b);
    });
  });

  describe('tenant isolation', () => {
    it('rows of one space are invisible through another', async () => {
      const { org: o, space: a } = await tenant();
      const other = space(o.id);
      await store.transaction((tx) => tx.spaces.insert(other));
      const b = await committedBudget(a.id, { name: 'mine' });
      const r = reservation(b, { settleBy: null });
      const e = entry(r, { workKey: 'wk' });
      await store.transaction(async (tx) => {
        await tx.reservations.insert(r);
        await tx.budgetEntries.insert(e);
        await tx.events.append(a.id, T0, [event(b.id)]);
        await tx.idempotency.put(record(a.id, 'req'));
      });

      await store.read(async (tx) => {
        expect(await tx.budgets.get(other.id, b.id)).toBeUndefined();
        expect(await tx.budgets.getByName(other.id, 'mine')).toBeUndefined();
        expect(await tx.budgets.list(other.id, null, 10)).toEqual([]);
        expect(await tx.reservations.get(other.id, r.id)).toBeUndefined();
        expect(await tx.reservations.listActive(other.id, b.id)).toEqual([]);
        expect(await tx.budgetEntries.getByWorkKey(other.id, b.id, 'wk')).toBeUndefined();
        expect(await tx.idempotency.get(other.id, 'req')).toBeUndefined();
        // ...and visible through their own.
        expect(await tx.budgets.get(a.id, b.id)).toEqual(b);
      });
      expect(await visibleJournal(a.id, 1)).toHaveLength(1);
      expect(await store.read((tx) => tx.events.listAfter(other.id, '0', 10))).toEqual([]);
      // An update addressed through the wrong space changes nothing.
      await expect(store.transaction((tx) => tx.budgets.update({ ...b, spaceId: other.id, availableMinor: 0n, settledMinor: 100n }))).rejects.toThrow();
      expect(await store.read((tx) => tx.budgets.get(a.id, b.id))).toEqual(b);
    });
  });
});
