import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { maxGateLevels, type Mailbox, type Run, type TaskGroup } from '@baton/core';
import { storeTargets, useTenantStore } from './support/databases';

/** The run repository (docs/design/0019-runs.md) on every store. */
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

  it('finds the run work under a scope belongs to: its own, else the nearest above it through gate scopes, in its space only', async () => {
    const { store, spaceId } = tenant;
    const box: Mailbox = { id: randomUUID(), spaceId, name: 'gates', mode: 'WORK', recipientId: null, backlogLimit: 1000, createdAt: T0, updatedAt: T0 };
    const group = (parentScopeId: string | null): TaskGroup => ({
      id: randomUUID(), spaceId, scopeId: randomUUID(), parentScopeId, mailboxId: box.id, condition: 'ALL_TERMINAL', threshold: null, expectedMembers: null, deadline: null,
      state: 'OPEN', outcome: null, outcomeReason: null, memberCount: 0, decidedAt: null, createdAt: T0, updatedAt: T0,
    });
    const parent = run({ state: 'COMPLETED', endedAt: T0 });
    const child = run({ parentScopeId: parent.scopeId });
    const gate = group(parent.scopeId);
    const nested = group(gate.scopeId);
    const underChild = group(child.scopeId);
    const loose = group(randomUUID());
    await store.transaction(async (tx) => {
      await tx.mailboxes.insert(box);
      for (const r of [parent, child]) await tx.runs.insert(r);
      for (const g of [gate, nested, underChild, loose]) await tx.taskGroups.insert(g);
    });
    const governing = (scopeId: string, space = spaceId) => store.transaction(async (tx) => (await tx.runs.governing(space, scopeId))?.scopeId);
    expect(await governing(parent.scopeId)).toBe(parent.scopeId);
    // A child run governs its own scope, whatever its parent's state.
    expect(await governing(child.scopeId)).toBe(child.scopeId);
    expect(await governing(gate.scopeId)).toBe(parent.scopeId);
    expect(await governing(nested.scopeId)).toBe(parent.scopeId);
    expect(await governing(underChild.scopeId)).toBe(child.scopeId);
    expect(await store.transaction((tx) => tx.runs.governing(spaceId, parent.scopeId))).toEqual(parent);
    // Runs are optional: a scope with no run, at or above it, has none.
    expect(await governing(randomUUID())).toBeUndefined();
    expect(await governing(loose.scopeId)).toBeUndefined();
    expect(await governing(parent.scopeId, await tenant.otherSpace())).toBeUndefined();
  });

  it(`looks at most ${maxGateLevels} gate scopes up`, async () => {
    const { store, spaceId } = tenant;
    const box: Mailbox = { id: randomUUID(), spaceId, name: 'deep', mode: 'WORK', recipientId: null, backlogLimit: 1000, createdAt: T0, updatedAt: T0 };
    const root = run();
    const gates: TaskGroup[] = [];
    for (let level = 0, parent = root.scopeId; level <= maxGateLevels; level++) {
      const g: TaskGroup = {
        id: randomUUID(), spaceId, scopeId: randomUUID(), parentScopeId: parent, mailboxId: box.id, condition: 'ALL_TERMINAL', threshold: null, expectedMembers: null, deadline: null,
        state: 'OPEN', outcome: null, outcomeReason: null, memberCount: 0, decidedAt: null, createdAt: T0, updatedAt: T0,
      };
      gates.push(g);
      parent = g.scopeId;
    }
    await store.transaction(async (tx) => {
      await tx.mailboxes.insert(box);
      await tx.runs.insert(root);
      for (const g of gates) await tx.taskGroups.insert(g);
    });
    const governing = (scopeId: string) => store.transaction(async (tx) => (await tx.runs.governing(spaceId, scopeId))?.scopeId);
    expect(await governing(gates[maxGateLevels - 1]!.scopeId)).toBe(root.scopeId);
    expect(await governing(gates[maxGateLevels]!.scopeId)).toBeUndefined();
  });
});
