import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import type { CandidateRequest, DeliveryRequirements, Mailbox, NewMessage, Task } from '@baton/core';
import { storeTargets, useTenantStore } from './support/databases';

/** What admission needs from every store: candidates that move their tasks as they claim, savepoints, the principal lookup. */
const T0 = 1_700_000_000_000;

describe.each(storeTargets())('admission store conformance on $name', (target) => {
  const tenant = useTenantStore(target, T0);
  let box: Mailbox;
  const scopeId = randomUUID();

  beforeEach(async () => {
    box = { id: randomUUID(), spaceId: tenant.spaceId, name: `box-${randomUUID()}`, mode: 'WORK', recipientId: null, backlogLimit: 1000, createdAt: T0, updatedAt: T0 };
    await tenant.store.transaction((tx) => tx.mailboxes.insert(box));
  });

  const needs: DeliveryRequirements = { pools: [{ id: randomUUID(), name: 'gpu', units: 1 }], quotas: [], budgets: [], workLimit: null };

  /** A task and its READY delivery; `plain` sends a message without a task. */
  const deliver = async (requirements: DeliveryRequirements | null, plain = false): Promise<{ taskId: string | null; messageId: string }> =>
    tenant.store.transaction(async (tx) => {
      const taskId = plain ? null : randomUUID();
      if (taskId !== null) {
        const task: Task = {
          id: taskId, spaceId: tenant.spaceId, taskKey: `k-${taskId}`, fingerprint: 'f'.repeat(64), mailboxId: box.id, scopeId, state: 'PENDING', input: null,
          requirements: { pools: [], quotas: [], budgets: [] }, workLimit: null, deadline: null, attempts: 0, outcome: null, failureReason: null, messageId: null, groupId: null, tombstoned: false, createdAt: T0, updatedAt: T0,
        };
        await tx.tasks.insert(task);
      }
      const message: NewMessage = {
        id: randomUUID(), spaceId: tenant.spaceId, mailboxId: box.id, scopeId, payload: { taskId }, workKey: null, deadline: null, taskId, requirements, claimed: null, state: 'READY', attempt: 0,
        tokenHash: null, holder: null, holderSession: null, leaseExpiresAt: null, result: null, createdAt: T0, updatedAt: T0,
      };
      await tx.messages.insert(message);
      return { taskId, messageId: message.id };
    });
  const request = (afterSeq = 0): CandidateRequest => ({
    spaceId: tenant.spaceId, mailboxId: box.id, scopeIds: [scopeId], holder: 'h', holderSession: 's', tokenHash: randomUUID(), leaseExpiresAt: T0 + 30_000, nowMs: T0, afterSeq,
  });

  it('claimCandidate claims a delivery without requirements in one step, and only locks one with requirements', async () => {
    const { store, spaceId } = tenant;
    await deliver(null, true); // a plain message: never a candidate
    const needy = await deliver(needs);
    const free = await deliver(null);
    const first = await store.transaction((tx) => tx.messages.claimCandidate(request()));
    expect(first?.claimed).toBe(false);
    expect(first?.message).toMatchObject({ id: needy.messageId, state: 'READY', attempt: 0, requirements: needs });
    const second = await store.transaction((tx) => tx.messages.claimCandidate(request(first!.message.seq)));
    expect(second?.claimed).toBe(true);
    expect(second?.message).toMatchObject({ id: free.messageId, state: 'CLAIMED', attempt: 1, holder: 'h', holderSession: 's', claimed: null });
    expect(await store.transaction((tx) => tx.messages.claimCandidate(request(second!.message.seq)))).toBeUndefined();
    // The one with requirements is still READY: only an update claims it.
    expect(await store.read((tx) => tx.messages.get(spaceId, needy.messageId))).toMatchObject({ state: 'READY' });
  });

  it('claimCandidates claims up to N task deliveries in seq order, moves their tasks, and only locks those with requirements', async () => {
    const { store, spaceId } = tenant;
    await deliver(null, true); // a plain message: never a candidate
    const a = await deliver(null);
    const needy = await deliver(needs);
    const b = await deliver(null);
    const c = await deliver(null);
    const batch = (afterSeq: number, tokenHashes: string[]) => store.transaction((tx) => tx.messages.claimCandidates({ ...request(afterSeq), tokenHashes, nowMs: T0 + 3 }));
    const found = await batch(0, ['t1', 't2', 't3']);
    expect(found.map((f) => [f.message.id, f.claimed])).toEqual([
      [a.messageId, true],
      [needy.messageId, false],
      [b.messageId, true],
    ]);
    // Each claimed row carries one of the hashes, no two the same; the one only locked none.
    expect(['t1', 't2', 't3']).toEqual(expect.arrayContaining([found[0]!.message.tokenHash, found[2]!.message.tokenHash]));
    expect(found[0]!.message.tokenHash).not.toBe(found[2]!.message.tokenHash);
    expect(found[1]!.message.tokenHash).toBeNull();
    const claimedA = found[0]!;
    expect(claimedA.claimed && claimedA.task).toMatchObject({ id: a.taskId, state: 'RUNNING', attempts: 1, updatedAt: T0 + 3 });
    expect(await store.read((tx) => tx.tasks.get(spaceId, b.taskId!))).toMatchObject({ state: 'RUNNING', attempts: 1 });
    expect(await store.read((tx) => tx.messages.get(spaceId, needy.messageId))).toMatchObject({ state: 'READY', attempt: 0 });
    const rest = await batch(found.at(-1)!.message.seq, ['x', 'y']);
    expect(rest.map((f) => [f.message.id, f.claimed])).toEqual([[c.messageId, true]]);
    expect(await batch(0, ['z'])).toEqual([{ message: expect.objectContaining({ id: needy.messageId }), claimed: false }]);
  });

  it('getByDeliveries answers the tasks of the named deliveries', async () => {
    const a = await deliver(null);
    const b = await deliver(null);
    const plain = await deliver(null, true);
    const tasks = await tenant.store.read((tx) => tx.tasks.getByDeliveries(tenant.spaceId, [b.messageId, plain.messageId, a.messageId, randomUUID()]));
    expect(tasks.map((t) => t.id).sort()).toEqual([a.taskId!, b.taskId!].sort());
  });

  it('claimCandidate moves the claimed delivery\'s task to RUNNING in the same step, and leaves an ended task as it is', async () => {
    const { store, spaceId } = tenant;
    const live = await deliver(null);
    const ended = await deliver(null);
    await store.transaction(async (tx) => {
      const task = (await tx.tasks.get(spaceId, ended.taskId!))!;
      await tx.tasks.update({ ...task, state: 'CANCELLED', updatedAt: T0 + 1 });
    });
    const first = await store.transaction((tx) => tx.messages.claimCandidate({ ...request(), nowMs: T0 + 5 }));
    expect(first).toMatchObject({ claimed: true, message: { id: live.messageId, attempt: 1 } });
    const moved = first?.claimed ? first.task : undefined;
    expect(moved).toMatchObject({ id: live.taskId, state: 'RUNNING', attempts: 1, outcome: null, failureReason: null, updatedAt: T0 + 5 });
    expect(await store.read((tx) => tx.tasks.get(spaceId, live.taskId!))).toEqual(moved);

    const second = await store.transaction((tx) => tx.messages.claimCandidate({ ...request(first!.message.seq), nowMs: T0 + 6 }));
    expect(second).toMatchObject({ claimed: true, message: { id: ended.messageId }, task: undefined });
    expect(await store.read((tx) => tx.tasks.get(spaceId, ended.taskId!))).toMatchObject({ state: 'CANCELLED', updatedAt: T0 + 1 });
  });

  it('a savepoint keeps what work wrote when it answers true, and undoes writes and events when it answers false or throws', async () => {
    const { store, spaceId } = tenant;
    const { messageId } = await deliver(null);
    const eventsAfter = async () => (await store.read((tx) => tx.events.listAfter(spaceId, '0', 100))).length;
    const before = await eventsAfter();
    await store.transaction(async (tx) => {
      const m = (await tx.messages.get(spaceId, messageId, { forUpdate: true }))!;
      const undone = await tx.savepoints.attempt(async () => {
        await tx.messages.update({ ...m, result: { changed: 1 } });
        await tx.events.append(spaceId, T0, [{ type: 'x.y', aggregateType: 'x', aggregateId: 'a', scopeId: null, data: {} }]);
        return false;
      });
      expect(undone).toBe(false);
      await expect(tx.savepoints.attempt(async () => {
        await tx.messages.update({ ...m, result: { changed: 2 } });
        throw new Error('planted');
      })).rejects.toThrow('planted');
      expect((await tx.messages.get(spaceId, messageId))!.result).toBeNull();
      expect(await tx.savepoints.attempt(async () => (await tx.messages.update({ ...m, result: { changed: 3 } }), true))).toBe(true);
    });
    expect((await store.read((tx) => tx.messages.get(spaceId, messageId)))!.result).toEqual({ changed: 3 });
    expect(await eventsAfter()).toBe(before);
  });

  it('claimCandidates leaves an ended task as it is while it claims its delivery, and moves the live ones beside it', async () => {
    const { store, spaceId } = tenant;
    const ended = await deliver(null);
    const live = await deliver(null);
    const cancelled = await store.transaction(async (tx) => {
      const task = (await tx.tasks.get(spaceId, ended.taskId!))!;
      const next: Task = { ...task, state: 'CANCELLED', failureReason: 'TEST', updatedAt: T0 + 1 };
      await tx.tasks.update(next);
      return next;
    });
    const found = await store.transaction((tx) => tx.messages.claimCandidates({ ...request(), tokenHashes: ['p', 'q'], nowMs: T0 + 4 }));
    expect(found.map((f) => [f.message.id, f.claimed, f.claimed && f.task?.state])).toEqual([
      [ended.messageId, true, undefined],
      [live.messageId, true, 'RUNNING'],
    ]);
    expect(await store.read((tx) => tx.tasks.get(spaceId, ended.taskId!))).toEqual(cancelled);
    expect(await store.read((tx) => tx.tasks.get(spaceId, live.taskId!))).toMatchObject({ state: 'RUNNING', attempts: 1, updatedAt: T0 + 4 });
  });

  it('getWithTenant answers the key with its org and the named space in one lookup', async () => {
    const { store, spaceId, orgId } = tenant;
    const keyId = randomUUID();
    await store.transaction((tx) =>
      tx.apiKeys.insert({ id: keyId, orgId, name: 'k', secretHash: 'h', permissions: ['coordination_read'], spaceIds: null, createdAt: T0, revokedAt: null }),
    );
    const found = await store.read((tx) => tx.apiKeys.getWithTenant(keyId, spaceId));
    expect(found?.key).toMatchObject({ id: keyId, orgId, permissions: ['coordination_read'], spaceIds: null });
    expect(found?.org).toMatchObject({ id: orgId, plan: 'TEAM' });
    expect(found?.space).toEqual({ id: spaceId, orgId, name: 's', limits: null, createdAt: T0, updatedAt: T0 });
    expect((await store.read((tx) => tx.apiKeys.getWithTenant(keyId, randomUUID())))?.space).toBeUndefined();
    expect(await store.read((tx) => tx.apiKeys.getWithTenant(randomUUID(), spaceId))).toBeUndefined();
  });
});
