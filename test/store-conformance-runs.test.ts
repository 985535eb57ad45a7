import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Run } from '@baton/core';
import { storeTargets, useTenantStore } from './support/databases';

/** The run repository (decisions §10) on every store. */
const T0 = 1_700_000_000_000;

describe.each(storeTargets())('run store conformance on $name', (target) => {
  const tenant = useTenantStore(target, T0);

  const run = (over: Partial<Run> = {}): Run => ({
    spaceId: tenant.spaceId, scopeId: randomUUID(), parentScopeId: null, name: null, state: 'ACTIVE', childLimit: 10, children: 0, cascadePending: false, createdAt: T0, updatedAt: T0, endedAt: null, ...over,
  });

  it('inserts a run once per scopeId and reads back what it wrote', async () => {
    const { store, spaceId } = tenant;
    const r = run({ name: 'n' });
    expect(await store.transaction((tx) => tx.runs.insert(r))).toBe(true);
    expect(await store.transaction((tx) => tx.runs.insert({ ...r, name: 'other' }))).toBe(false);
    expect(await store.read((tx) => tx.runs.get(spaceId, r.scopeId))).toEqual(r);
    const ended = { ...r, state: 'CANCELLED' as const, cascadePending: true, endedAt: T0 + 5, updatedAt: T0 + 5, children: 2 };
    await store.transaction((tx) => tx.runs.update(ended));
    expect(await store.read((tx) => tx.runs.get(spaceId, r.scopeId))).toEqual(ended);
    expect(await store.read((tx) => tx.runs.get(randomUUID(), r.scopeId))).toBeUndefined();
  });

  it('lists children by scopeId in pages, and the ACTIVE ones oldest first', async () => {
    const { store, spaceId } = tenant;
    const parent = run();
    const kids = [run({ parentScopeId: parent.scopeId, createdAt: T0 + 2 }), run({ parentScopeId: parent.scopeId, createdAt: T0 + 1 }), run({ parentScopeId: parent.scopeId, state: 'COMPLETED', endedAt: T0 })];
    await store.transaction(async (tx) => {
      for (const r of [parent, ...kids, run()]) await tx.runs.insert(r);
    });
    const byScope = kids.map((k) => k.scopeId).sort();
    expect((await store.read((tx) => tx.runs.children(spaceId, parent.scopeId, null, 2))).map((r) => r.scopeId)).toEqual(byScope.slice(0, 2));
    expect((await store.read((tx) => tx.runs.children(spaceId, parent.scopeId, byScope[1]!, 2))).map((r) => r.scopeId)).toEqual(byScope.slice(2));
    expect((await store.transaction((tx) => tx.runs.activeChildren(spaceId, parent.scopeId, 10))).map((r) => r.scopeId)).toEqual([kids[1]!.scopeId, kids[0]!.scopeId]);
  });

  it('claims cancelled runs with a cascade pending, oldest first, up to the limit', async () => {
    const { store } = tenant;
    const due = [run({ state: 'CANCELLED', cascadePending: true, endedAt: T0, createdAt: T0 + 1 }), run({ state: 'CANCELLED', cascadePending: true, endedAt: T0, createdAt: T0 })];
    await store.transaction(async (tx) => {
      for (const r of [...due, run({ state: 'CANCELLED', endedAt: T0 }), run()]) await tx.runs.insert(r);
    });
    expect((await store.transaction((tx) => tx.runs.claimCascading(10))).map((r) => r.scopeId)).toEqual([due[1]!.scopeId, due[0]!.scopeId]);
    expect(await store.transaction((tx) => tx.runs.claimCascading(1))).toHaveLength(1);
  });
});
