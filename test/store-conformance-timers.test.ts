import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Mailbox, Timer } from '@baton/core';
import { storeTargets, useTenantStore } from './support/databases';

/**
 * The timer repository on every store: the memory store (the reference), PGlite and PostgreSQL
 * behave alike; on PostgreSQL also the sweep's claim under concurrency (SKIP LOCKED) and the
 * guard that no timer leaves ARMED twice. Companion of test/store-conformance.test.ts.
 */

const T0 = 1_700_000_000_123;

describe.each(storeTargets())('timer store conformance on $name', (target) => {
  const tenant = useTenantStore(target, T0);
  let box: Mailbox;

  beforeEach(async () => {
    box = { id: randomUUID(), spaceId: tenant.spaceId, name: 'box', mode: 'WORK', recipientId: null, backlogLimit: 1000, createdAt: T0, updatedAt: T0 };
    await tenant.store.transaction((tx) => tx.mailboxes.insert(box));
  });

  function timer(overrides: Partial<Timer> = {}): Timer {
    const fireAt = overrides.fireAt ?? T0 + 1_000;
    return {
      id: randomUUID(),
      spaceId: tenant.spaceId,
      timerKey: `key-${randomUUID()}`,
      scopeId: randomUUID(),
      mailboxId: box.id,
      payload: { n: 1, nested: ['a', null] },
      fireAt,
      dueAt: fireAt,
      fingerprint: 'f'.repeat(64),
      state: 'ARMED',
      firedAt: null,
      firedMessageId: null,
      cancelledAt: null,
      createdAt: T0,
      updatedAt: T0,
      ...overrides,
    };
  }

  async function committed(overrides: Partial<Timer> = {}): Promise<Timer> {
    const t = timer(overrides);
    expect(await tenant.store.transaction((tx) => tx.timers.insert(t))).toBe(true);
    return t;
  }

  it('inserts, gets (also for update and by key) and moves an ARMED timer; refuses a second insert of a key', async () => {
    const { store, spaceId } = tenant;
    const t = await committed({ timerKey: 'k'.repeat(512), payload: null });
    expect(await store.read((tx) => tx.timers.get(spaceId, t.id))).toEqual(t);
    expect(await store.transaction((tx) => tx.timers.get(spaceId, t.id, { forUpdate: true }))).toEqual(t);
    expect(await store.read((tx) => tx.timers.getByKey(spaceId, t.timerKey))).toEqual(t);
    expect(await store.read((tx) => tx.timers.get(spaceId, randomUUID()))).toBeUndefined();
    expect(await store.read((tx) => tx.timers.getByKey(randomUUID(), t.timerKey))).toBeUndefined();

    // Same key, another id: nothing is written.
    expect(await store.transaction((tx) => tx.timers.insert(timer({ timerKey: t.timerKey })))).toBe(false);
    expect((await store.read((tx) => tx.timers.list(spaceId, { states: null, scopeId: null }, null, 10))).map((x) => x.id)).toEqual([t.id]);

    const deferred: Timer = { ...t, dueAt: t.fireAt + 1_000, updatedAt: T0 + 5 };
    await store.transaction((tx) => tx.timers.update(deferred));
    expect(await store.read((tx) => tx.timers.get(spaceId, t.id))).toEqual(deferred);
    const fired: Timer = { ...deferred, state: 'FIRED', firedAt: T0 + 9, firedMessageId: randomUUID(), updatedAt: T0 + 9 };
    await store.transaction((tx) => tx.timers.update(fired));
    expect(await store.read((tx) => tx.timers.get(spaceId, t.id))).toEqual(fired);
  });

  it('refuses to move a timer that is no longer ARMED, or a missing one', async () => {
    const { store, spaceId } = tenant;
    const t = await committed();
    const cancelled: Timer = { ...t, state: 'CANCELLED', cancelledAt: T0 + 1, updatedAt: T0 + 1 };
    await store.transaction((tx) => tx.timers.update(cancelled));
    await expect(store.transaction((tx) => tx.timers.update({ ...t, state: 'FIRED', firedAt: T0 + 2, firedMessageId: randomUUID(), updatedAt: T0 + 2 }))).rejects.toThrow();
    expect(await store.read((tx) => tx.timers.get(spaceId, t.id))).toEqual(cancelled);
    await expect(store.transaction((tx) => tx.timers.update(timer()))).rejects.toThrow();
  });

  it('lists in (createdAt, id) order, filters by state and scopeId, and pages with an exclusive position', async () => {
    const { store, spaceId } = tenant;
    const scopeId = randomUUID();
    const a = await committed({ createdAt: T0 + 2, scopeId });
    const b = await committed({ createdAt: T0 + 1 });
    const c = await committed({ createdAt: T0 + 2, scopeId, state: 'CANCELLED', cancelledAt: T0 + 3 });
    const [first, second] = [a, c].sort((x, y) => (x.id < y.id ? -1 : 1));
    const all = { states: null, scopeId: null };
    expect((await store.read((tx) => tx.timers.list(spaceId, all, null, 10))).map((t) => t.id)).toEqual([b.id, first!.id, second!.id]);
    expect((await store.read((tx) => tx.timers.list(spaceId, all, { createdAt: first!.createdAt, id: first!.id }, 10))).map((t) => t.id)).toEqual([second!.id]);
    expect((await store.read((tx) => tx.timers.list(spaceId, all, null, 1))).map((t) => t.id)).toEqual([b.id]);
    expect((await store.read((tx) => tx.timers.list(spaceId, { states: ['CANCELLED'], scopeId: null }, null, 10))).map((t) => t.id)).toEqual([c.id]);
    expect((await store.read((tx) => tx.timers.list(spaceId, { states: ['ARMED'], scopeId }, null, 10))).map((t) => t.id)).toEqual([a.id]);
    expect((await store.read((tx) => tx.timers.list(spaceId, { states: null, scopeId }, null, 10))).map((t) => t.id)).toEqual([first!.id, second!.id]);
    expect(await store.read((tx) => tx.timers.list(randomUUID(), all, null, 10))).toEqual([]);
  });

  it('counts ARMED timers up to a cap, and a scope\'s timers by state', async () => {
    const { store, spaceId } = tenant;
    const scopeId = randomUUID();
    for (let i = 0; i < 4; i++) await committed({ scopeId });
    await committed({ scopeId, state: 'FIRED', firedAt: T0, firedMessageId: randomUUID() });
    await committed({ state: 'CANCELLED', cancelledAt: T0 });
    expect(await store.read((tx) => tx.timers.countArmed(spaceId, 10))).toBe(4);
    expect(await store.read((tx) => tx.timers.countArmed(spaceId, 3))).toBe(3);
    expect(await store.read((tx) => tx.timers.countArmed(randomUUID(), 10))).toBe(0);
    const counts = await store.read((tx) => tx.timers.countByState(spaceId, scopeId));
    expect([...counts].sort((x, y) => x.state.localeCompare(y.state))).toEqual([{ state: 'ARMED', count: 4 }, { state: 'FIRED', count: 1 }]);
  });

  it('claims ARMED timers due by now, oldest due first across spaces; another transaction skips those held', async () => {
    const { store } = tenant;
    const otherSpace = await tenant.otherSpace();
    const otherBox: Mailbox = { ...box, id: randomUUID(), spaceId: otherSpace };
    await store.transaction((tx) => tx.mailboxes.insert(otherBox));
    const late = await committed({ fireAt: T0 + 300 });
    const early = await committed({ fireAt: T0 + 100 });
    const deferred = await committed({ fireAt: T0, dueAt: T0 + 200 });
    const elsewhere = timer({ spaceId: otherSpace, mailboxId: otherBox.id, fireAt: T0 + 150, dueAt: T0 + 150 });
    await store.transaction((tx) => tx.timers.insert(elsewhere));
    await committed({ fireAt: T0 + 301 }); // not due
    await committed({ fireAt: T0, state: 'CANCELLED', cancelledAt: T0 });
    await committed({ fireAt: T0, state: 'FIRED', firedAt: T0, firedMessageId: randomUUID() });
    const due = (nowMs: number, limit: number) => store.transaction(async (tx) => (await tx.timers.claimDue(nowMs, limit)).map((t) => t.id));
    expect(await due(T0 + 300, 10)).toEqual([early.id, elsewhere.id, deferred.id, late.id]);
    expect(await due(T0 + 300, 2)).toEqual([early.id, elsewhere.id]);
    expect(await due(T0 + 99, 10)).toEqual([]);
    if (!target.concurrentTransactions) return;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let claimed!: () => void;
    const first = new Promise<void>((resolve) => (claimed = resolve));
    const holder = store.transaction(async (tx) => {
      expect((await tx.timers.claimDue(T0 + 300, 2)).map((t) => t.id)).toEqual([early.id, elsewhere.id]);
      claimed();
      await held;
    });
    await first;
    expect(await due(T0 + 300, 10)).toEqual([deferred.id, late.id]);
    release();
    await holder;
  });

  it('on PostgreSQL, two sweeps racing move each timer out of ARMED once', async () => {
    const { store } = tenant;
    if (!target.concurrentTransactions) return;
    const timers = await Promise.all(Array.from({ length: 20 }, (_, i) => committed({ fireAt: T0 + i })));
    const sweep = () =>
      store.transaction(async (tx) => {
        const due = await tx.timers.claimDue(T0 + 1_000, 100);
        for (const t of due) await tx.timers.update({ ...t, state: 'FIRED', firedAt: T0 + 1_000, firedMessageId: randomUUID(), updatedAt: T0 + 1_000 });
        return due.map((t) => t.id);
      });
    const [a, b] = await Promise.all([sweep(), sweep()]);
    expect([...a, ...b].sort()).toEqual(timers.map((t) => t.id).sort());
    expect(await store.transaction((tx) => tx.timers.claimDue(T0 + 1_000, 100))).toEqual([]);
  });

  it('locks the ARMED timers of some scopes in id order, up to a limit', async () => {
    const { store, spaceId } = tenant;
    const [s1, s2] = [randomUUID(), randomUUID()];
    const mine = [await committed({ scopeId: s1 }), await committed({ scopeId: s2 }), await committed({ scopeId: s1 })];
    await committed({ scopeId: s1, state: 'CANCELLED', cancelledAt: T0 });
    await committed();
    const ids = mine.map((t) => t.id).sort();
    expect((await store.transaction((tx) => tx.timers.lockArmedInScopes(spaceId, [s1, s2], 10))).map((t) => t.id)).toEqual(ids);
    expect((await store.transaction((tx) => tx.timers.lockArmedInScopes(spaceId, [s1, s2], 2))).map((t) => t.id)).toEqual(ids.slice(0, 2));
    expect(await store.transaction((tx) => tx.timers.lockArmedInScopes(randomUUID(), [s1], 10))).toEqual([]);
  });
});
