import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { InvariantViolation, type Mailbox, type Task, type TaskGroup } from '@baton/core';
import { storeTargets, useTenantStore } from './support/databases';

/** Task groups, their members and the claim scopes below a scope, through the repository interfaces on every store. */
const T0 = 1_700_000_000_000;

describe.each(storeTargets())('task group store conformance on $name', (target) => {
  const tenant = useTenantStore(target, T0);
  let box: Mailbox;

  beforeEach(async () => {
    box = { id: randomUUID(), spaceId: tenant.spaceId, name: `box-${randomUUID()}`, mode: 'WORK', recipientId: null, backlogLimit: 1000, createdAt: T0, updatedAt: T0 };
    await tenant.store.transaction((tx) => tx.mailboxes.insert(box));
  });

  const group = (over: Partial<TaskGroup> = {}): TaskGroup => ({
    id: randomUUID(), spaceId: tenant.spaceId, scopeId: randomUUID(), parentScopeId: null, mailboxId: box.id, condition: 'N_ACCEPTED', threshold: 2, expectedMembers: 3, deadline: null,
    state: 'OPEN', outcome: null, outcomeReason: null, memberCount: 0, decidedAt: null, createdAt: T0, updatedAt: T0, ...over,
  });
  const task = (over: Partial<Task> = {}): Task => ({
    id: randomUUID(), spaceId: tenant.spaceId, taskKey: `k-${randomUUID()}`, fingerprint: 'f'.repeat(64), mailboxId: box.id, scopeId: randomUUID(), state: 'PENDING', input: null,
    requirements: { pools: [], quotas: [], budgets: [] }, workLimit: null, deadline: null, attempts: 0, outcome: null, failureReason: null, messageId: null, groupId: null, tombstoned: false,
    createdAt: T0, updatedAt: T0, ...over,
  });
  const insertGroup = async (g: TaskGroup): Promise<TaskGroup> => (await tenant.store.transaction((tx) => tx.taskGroups.insert(g)), g);
  const insertTask = async (t: Task): Promise<Task> => (await tenant.store.transaction((tx) => tx.tasks.insert(t)), t);
  const member = (g: TaskGroup, t: Task, position: number) => ({ spaceId: tenant.spaceId, groupId: g.id, taskId: t.id, position, verdict: 'PENDING' as const, joinedAt: T0 + position, verdictAt: null });

  it('round-trips a group, and an update writes its state, outcome and membership', async () => {
    const { store, spaceId } = tenant;
    const g = await insertGroup(group({ parentScopeId: randomUUID(), deadline: T0 + 60_000 }));
    expect(await store.read((tx) => tx.taskGroups.get(spaceId, g.id))).toEqual(g);
    expect(await store.read((tx) => tx.taskGroups.get(randomUUID(), g.id))).toBeUndefined();
    const decided: TaskGroup = { ...g, state: 'DECIDED', outcome: 'FAILED', outcomeReason: 'THRESHOLD_UNREACHABLE', memberCount: 1, decidedAt: T0 + 5, updatedAt: T0 + 5 };
    await store.transaction((tx) => tx.taskGroups.update(decided));
    expect(await store.read((tx) => tx.taskGroups.get(spaceId, g.id, { forUpdate: true }))).toEqual(decided);
  });

  it('refuses to store a group that breaks its invariants', async () => {
    await expect(insertGroup(group({ state: 'DECIDED' }))).rejects.toThrow(InvariantViolation);
    await expect(insertGroup(group({ condition: 'FIRST_ACCEPTED', threshold: 2 }))).rejects.toThrow(InvariantViolation);
    await expect(insertGroup(group({ expectedMembers: 2, memberCount: 2 }))).rejects.toThrow(InvariantViolation);
  });

  it('lists in (createdAt, id) order with a state filter, after a position', async () => {
    const { store, spaceId } = tenant;
    const a = await insertGroup(group({ createdAt: T0 }));
    const b = await insertGroup(group({ createdAt: T0 + 1, state: 'SEALED' }));
    const c = await insertGroup(group({ createdAt: T0 + 1, state: 'DECIDED', outcome: 'SUCCEEDED', outcomeReason: 'THRESHOLD_MET', decidedAt: T0 + 2 }));
    const [first, second] = [b, c].sort((x, y) => (x.id < y.id ? -1 : 1));
    expect((await store.read((tx) => tx.taskGroups.list(spaceId, null, null, 10))).map((g) => g.id)).toEqual([a.id, first!.id, second!.id]);
    expect((await store.read((tx) => tx.taskGroups.list(spaceId, ['SEALED', 'DECIDED'], null, 10))).map((g) => g.id)).toEqual([first!.id, second!.id]);
    expect((await store.read((tx) => tx.taskGroups.list(spaceId, null, { createdAt: first!.createdAt, id: first!.id }, 10))).map((g) => g.id)).toEqual([second!.id]);
    expect(await store.read((tx) => tx.taskGroups.list(spaceId, null, null, 1))).toHaveLength(1);
  });

  it('adds a member only to a task that is in no group, and writes the groupId onto the task', async () => {
    const { store, spaceId } = tenant;
    const g = await insertGroup(group());
    const other = await insertGroup(group());
    const t = await insertTask(task());
    expect(await store.transaction((tx) => tx.taskGroups.addMember(member(g, t, 1)))).toBe(true);
    expect((await store.read((tx) => tx.tasks.get(spaceId, t.id)))?.groupId).toBe(g.id);
    expect(await store.transaction((tx) => tx.taskGroups.addMember(member(other, t, 1)))).toBe(false);
    expect(await store.transaction((tx) => tx.taskGroups.addMember(member(g, t, 2)))).toBe(false);
    expect(await store.read((tx) => tx.taskGroups.listMembers(spaceId, other.id))).toEqual([]);
    expect(await store.read((tx) => tx.taskGroups.getMember(spaceId, other.id, t.id))).toBeUndefined();
  });

  it('reads members in join order with their task states, and writes verdicts', async () => {
    const { store, spaceId } = tenant;
    const g = await insertGroup(group());
    const [a, b] = [await insertTask(task({ state: 'SUCCEEDED', attempts: 1 })), await insertTask(task())];
    await store.transaction(async (tx) => {
      expect(await tx.taskGroups.addMember(member(g, b, 1))).toBe(true);
      expect(await tx.taskGroups.addMember(member(g, a, 2))).toBe(true);
    });
    await store.transaction((tx) => tx.taskGroups.setVerdict(spaceId, g.id, a.id, 'ACCEPTED', T0 + 9));
    const members = await store.read((tx) => tx.taskGroups.listMembers(spaceId, g.id));
    expect(members).toEqual([
      { ...member(g, b, 1), taskState: 'PENDING' },
      { ...member(g, a, 2), verdict: 'ACCEPTED', verdictAt: T0 + 9, taskState: 'SUCCEEDED' },
    ]);
    expect(await store.read((tx) => tx.taskGroups.getMember(spaceId, g.id, a.id))).toEqual(members[1]);
    const other = await insertGroup(group());
    const c = await insertTask(task());
    expect(await store.transaction((tx) => tx.taskGroups.addMember(member(other, c, 1)))).toBe(true);
    const both = await store.read((tx) => tx.taskGroups.listMembersOf(spaceId, [other.id, g.id]));
    expect(both.filter((m) => m.groupId === g.id)).toEqual(members);
    expect(both.filter((m) => m.groupId === other.id).map((m) => m.taskId)).toEqual([c.id]);
    expect(await store.read((tx) => tx.taskGroups.listMembersOf(spaceId, []))).toEqual([]);
  });

  it('claims undecided groups whose deadline passed, earliest first; another transaction skips those held', async () => {
    const { store } = tenant;
    const late = await insertGroup(group({ deadline: T0 + 2_000 }));
    const early = await insertGroup(group({ deadline: T0 + 1_000, state: 'SEALED' }));
    await insertGroup(group({ deadline: T0 + 9_000 }));
    await insertGroup(group({ deadline: T0, state: 'DECIDED', outcome: 'FAILED', outcomeReason: 'DEADLINE_EXCEEDED', decidedAt: T0 }));
    expect((await store.transaction((tx) => tx.taskGroups.claimDeadlinePassed(T0 + 5_000, 10))).map((g) => g.id)).toEqual([early.id, late.id]);
    if (!target.concurrentTransactions) return;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let claimed!: () => void;
    const first = new Promise<void>((resolve) => (claimed = resolve));
    const holder = store.transaction(async (tx) => {
      expect((await tx.taskGroups.claimDeadlinePassed(T0 + 5_000, 1)).map((g) => g.id)).toEqual([early.id]);
      claimed();
      await held;
    });
    await first;
    expect((await store.transaction((tx) => tx.taskGroups.claimDeadlinePassed(T0 + 5_000, 10))).map((g) => g.id)).toEqual([late.id]);
    release();
    await holder;
  });

  it('answers a mailbox with the scopes a claim takes from: the scope, then every gate scope below it', async () => {
    const { store, spaceId } = tenant;
    const root = randomUUID();
    const child = await insertGroup(group({ parentScopeId: root }));
    const grandchild = await insertGroup(group({ parentScopeId: child.scopeId }));
    await insertGroup(group({ parentScopeId: randomUUID() }));
    const found = await store.read((tx) => tx.mailboxes.getForClaim(spaceId, box.id, root));
    expect(found?.mailbox).toEqual(box);
    expect(found?.scopeIds[0]).toBe(root);
    expect([...found!.scopeIds].sort()).toEqual([root, child.scopeId, grandchild.scopeId].sort());
    expect((await store.read((tx) => tx.mailboxes.getForClaim(spaceId, box.id, grandchild.scopeId)))?.scopeIds).toEqual([grandchild.scopeId]);
    expect(await store.read((tx) => tx.mailboxes.getForClaim(spaceId, randomUUID(), root))).toBeUndefined();
    expect((await store.read((tx) => tx.mailboxes.getForClaim(randomUUID(), box.id, root)))).toBeUndefined();
  });

  /** A READY message without a task in `scopeId` of the box. */
  const sendTo = async (scopeId: string): Promise<{ id: string }> => {
    const id = randomUUID();
    await tenant.store.transaction((tx) =>
      tx.messages.insert({
        id, spaceId: tenant.spaceId, mailboxId: box.id, scopeId, payload: null, workKey: null, deadline: null, taskId: null, state: 'READY', attempt: 0,
        tokenHash: null, holder: null, holderSession: null, leaseExpiresAt: null, result: null, requirements: null, claimed: null, createdAt: T0, updatedAt: T0,
      }),
    );
    return { id };
  };

  it('claims across a scope subtree in send order, and only within it', async () => {
    const root = randomUUID();
    const child = await insertGroup(group({ parentScopeId: root }));
    const inChild = await sendTo(child.scopeId);
    await sendTo(randomUUID());
    const inRoot = await sendTo(root);
    const claim = (scopeIds: string[]) =>
      tenant.store.transaction((tx) => tx.messages.claimNext({ spaceId: tenant.spaceId, mailboxId: box.id, scopeIds, holder: 'h', holderSession: 's', tokenHash: randomUUID(), leaseExpiresAt: T0 + 30_000, nowMs: T0 }));
    expect((await claim([root, child.scopeId]))?.message.id).toBe(inChild.id);
    expect((await claim([root, child.scopeId]))?.message.id).toBe(inRoot.id);
    expect(await claim([root, child.scopeId])).toBeUndefined();
  });

  it('an unlessGated claim takes nothing from a scope with gate scopes below it, and claims as usual from one without', async () => {
    const { store, spaceId } = tenant;
    const root = randomUUID();
    const child = await insertGroup(group({ parentScopeId: root }));
    const inRoot = await sendTo(root);
    const inChild = await sendTo(child.scopeId);
    const request = (scopeId: string) => ({ spaceId, mailboxId: box.id, scopeIds: [scopeId], holder: 'h', holderSession: 's', tokenHash: randomUUID(), leaseExpiresAt: T0 + 30_000, nowMs: T0, unlessGated: true });
    expect(await store.transaction((tx) => tx.messages.claimNext(request(root)))).toBeUndefined();
    expect(await store.transaction((tx) => tx.messages.claimCandidate({ ...request(root), afterSeq: 0 }))).toBeUndefined();
    expect(await store.read((tx) => tx.messages.get(spaceId, inRoot.id))).toMatchObject({ state: 'READY' });
    // The child scope has no gate scope below it.
    expect((await store.transaction((tx) => tx.messages.claimNext(request(child.scopeId))))?.message.id).toBe(inChild.id);
  });
});
