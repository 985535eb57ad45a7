import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { maxRacedAttempts, type Mailbox, type Task } from '@baton/core';
import { storeTargets, useTenantStore } from './support/databases';

/** Tasks and subscribers through the repository interfaces on every store. */
const T0 = 1_700_000_000_000;

describe.each(storeTargets())('task store conformance on $name', (target) => {
  const tenant = useTenantStore(target, T0);
  let box: Mailbox;

  beforeEach(async () => {
    box = { id: randomUUID(), spaceId: tenant.spaceId, name: `box-${randomUUID()}`, mode: 'WORK', recipientId: null, backlogLimit: 1000, createdAt: T0, updatedAt: T0 };
    await tenant.store.transaction((tx) => tx.mailboxes.insert(box));
  });

  const task = (over: Partial<Task> = {}): Task => ({
    id: randomUUID(), spaceId: tenant.spaceId, taskKey: `k-${randomUUID()}`, fingerprint: 'f'.repeat(64), mailboxId: box.id, scopeId: randomUUID(), state: 'PENDING', input: { a: [1, 'x'] },
    requirements: { pools: [{ name: 'gpu', units: 1 }], quotas: [], budgets: [{ name: 'b', reserveMinor: '5' }] }, workLimit: 'wl', deadline: null, attempts: 0,
    outcome: null, failureReason: null, messageId: null, groupId: null, tombstoned: false, createdAt: T0, updatedAt: T0, ...over,
  });
  const withDelivery = async (t: Task): Promise<Task> =>
    tenant.store.transaction(async (tx) => {
      await tx.tasks.insert(t);
      const m = {
        id: randomUUID(), spaceId: tenant.spaceId, mailboxId: box.id, scopeId: t.scopeId, payload: { taskId: t.id }, workKey: null, deadline: t.deadline, taskId: t.id, state: 'READY', attempt: 0,
        tokenHash: null, holder: null, holderSession: null, leaseExpiresAt: null, result: null, requirements: null, claimed: null, createdAt: T0, updatedAt: T0,
      } as const;
      await tx.messages.insert(m);
      const next = { ...t, messageId: m.id };
      await tx.tasks.update(next);
      return next;
    });

  it('round-trips a task; a second of one taskKey loses the race: its transaction runs again and the first attempt writes nothing', async () => {
    const { store, spaceId } = tenant;
    const t = await withDelivery(task());
    expect(await store.read((tx) => tx.tasks.get(spaceId, t.id))).toEqual(t);
    expect(await store.read((tx) => tx.tasks.getByKey(spaceId, t.taskKey))).toEqual(t);
    const loser = task({ taskKey: t.taskKey });
    const other = task();
    let attempts = 0;
    const answer = await store.transaction(async (tx) => {
      attempts += 1;
      // The first attempt's other write must vanish with it: only the second attempt commits.
      if (attempts === 1) {
        await tx.tasks.insert(other);
        await tx.tasks.insert(loser);
      }
      return tx.tasks.getByKey(spaceId, t.taskKey);
    });
    expect(attempts).toBe(2);
    expect(answer?.id).toBe(t.id);
    expect(await store.read((tx) => tx.tasks.get(spaceId, loser.id))).toBeUndefined();
    expect(await store.read((tx) => tx.tasks.get(spaceId, other.id))).toBeUndefined();
    expect(await store.read((tx) => tx.tasks.get(randomUUID(), t.id))).toBeUndefined();
    const done = { ...t, state: 'SUCCEEDED' as const, attempts: 1, outcome: { ok: true }, updatedAt: T0 + 1 };
    await store.transaction((tx) => tx.tasks.update(done));
    expect(await store.read((tx) => tx.tasks.get(spaceId, t.id))).toEqual(done);
  });

  it('a transaction that keeps losing races answers CONFLICT, writing nothing', async () => {
    const { store, spaceId } = tenant;
    const t = await withDelivery(task());
    const other = task();
    let attempts = 0;
    const run = store.transaction(async (tx) => {
      attempts += 1;
      await tx.tasks.insert(other);
      await tx.tasks.insert(task({ taskKey: t.taskKey }));
    });
    await expect(run).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(attempts).toBe(maxRacedAttempts);
    expect(await store.read((tx) => tx.tasks.get(spaceId, other.id))).toBeUndefined();
  });

  it('lists in (createdAt, id) order with scope and state filters', async () => {
    const { store, spaceId } = tenant;
    const scopeId = randomUUID();
    const a = await withDelivery(task({ scopeId, createdAt: T0 }));
    const b = await withDelivery(task({ scopeId, createdAt: T0 + 1, state: 'RUNNING', attempts: 1 }));
    await withDelivery(task({ createdAt: T0 + 2 }));
    const ids = (rows: Task[]) => rows.map((t) => t.id);
    expect(ids(await store.read((tx) => tx.tasks.list(spaceId, scopeId, null, null, 10)))).toEqual([a.id, b.id]);
    expect(ids(await store.read((tx) => tx.tasks.list(spaceId, scopeId, ['RUNNING'], null, 10)))).toEqual([b.id]);
    expect(ids(await store.read((tx) => tx.tasks.list(spaceId, scopeId, null, { createdAt: a.createdAt, id: a.id }, 10)))).toEqual([b.id]);
    expect(await store.read((tx) => tx.tasks.list(spaceId, null, null, null, 10))).toHaveLength(3);
  });

  it('claims nonterminal tasks whose deadline passed, earliest first', async () => {
    const { store } = tenant;
    const late = await withDelivery(task({ deadline: T0 + 2_000 }));
    const early = await withDelivery(task({ deadline: T0 + 1_000 }));
    await withDelivery(task({ deadline: T0 + 500, state: 'SUCCEEDED' }));
    await withDelivery(task({ deadline: T0 + 9_000 }));
    // Live when written, finished since: the sweep's index (live_deadline on SQL) must follow the move.
    const finishedLater = await withDelivery(task({ deadline: T0 + 100, state: 'RUNNING', attempts: 1 }));
    await store.transaction((tx) => tx.tasks.update({ ...finishedLater, state: 'SUCCEEDED', outcome: { ok: true }, updatedAt: T0 + 1 }));
    const due = await store.transaction((tx) => tx.tasks.claimDeadlinePassed(T0 + 2_000, 10));
    expect(due.map((t) => t.id)).not.toContain(finishedLater.id);
    expect(due.map((t) => t.id).filter((id) => id === early.id || id === late.id)).toEqual([early.id, late.id]);
  });

  it('subscribers: add is idempotent, remove answers whether it removed', async () => {
    const { store, spaceId } = tenant;
    const t = await withDelivery(task());
    const sub = { spaceId, taskId: t.id, subscriberId: 'a', scopeId: t.scopeId, joinedAt: T0 };
    expect(await store.transaction((tx) => tx.tasks.addSubscriber(sub))).toBe(true);
    expect(await store.transaction((tx) => tx.tasks.addSubscriber({ ...sub, joinedAt: T0 + 5 }))).toBe(false);
    expect(await store.transaction((tx) => tx.tasks.addSubscriber({ ...sub, subscriberId: 'b', joinedAt: T0 + 1 }))).toBe(true);
    expect((await store.read((tx) => tx.tasks.listSubscribers(spaceId, t.id))).map((s) => s.subscriberId)).toEqual(['a', 'b']);
    expect(await store.transaction((tx) => tx.tasks.removeSubscriber(spaceId, t.id, 'a'))).toBe(true);
    expect(await store.transaction((tx) => tx.tasks.removeSubscriber(spaceId, t.id, 'a'))).toBe(false);
    expect(await store.read((tx) => tx.tasks.listSubscribers(spaceId, t.id))).toEqual([{ ...sub, subscriberId: 'b', joinedAt: T0 + 1 }]);
  });

  it('lists a task\'s events from the journal in order', async () => {
    const { store, spaceId } = tenant;
    const t = await withDelivery(task());
    await store.transaction((tx) =>
      tx.events.append(spaceId, T0, [
        { type: 'task.submitted', aggregateType: 'task', aggregateId: t.id, scopeId: t.scopeId, data: { taskId: t.id } },
        { type: 'message.sent', aggregateType: 'mailbox', aggregateId: box.id, scopeId: t.scopeId, data: {} },
        { type: 'task.running', aggregateType: 'task', aggregateId: t.id, scopeId: t.scopeId, data: { taskId: t.id } },
      ]),
    );
    const events = await store.read((tx) => tx.tasks.listEvents(spaceId, t.id, 10));
    expect(events.map((e) => e.type)).toEqual(['task.submitted', 'task.running']);
  });
});
