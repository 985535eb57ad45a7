import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { defaultSpaceLimits, deliveries, SeededRandom, type ClaimRequest, type Mailbox, type NewMessage, type Task, type Tx } from '@baton/core';
import { journalWhen, storeTargets, useTenantStore } from './support/databases';

/**
 * Mailboxes and messages through the repository interfaces on every store: FIFO claims, and on
 * PostgreSQL the claim's promise under concurrency (SKIP LOCKED): every message claimed once.
 */
const T0 = 1_700_000_000_000;

describe.each(storeTargets())('message store conformance on $name', (target) => {
  const tenant = useTenantStore(target, T0);

  const mailbox = (over: Partial<Mailbox> = {}): Mailbox => ({
    id: randomUUID(), spaceId: tenant.spaceId, name: `box-${randomUUID()}`, mode: 'WORK', recipientId: null, backlogLimit: 1000, createdAt: T0, updatedAt: T0, ...over,
  });
  const message = (mailboxId: string, scopeId: string, over: Partial<NewMessage> = {}): NewMessage => ({
    id: randomUUID(), spaceId: tenant.spaceId, mailboxId, scopeId, payload: { n: 1 }, workKey: null, deadline: null, taskId: null, state: 'READY', attempt: 0,
    tokenHash: null, holder: null, holderSession: null, leaseExpiresAt: null, result: null, requirements: null, claimed: null, createdAt: T0, updatedAt: T0, ...over,
  });
  const claimOf = (mailboxId: string, scopeId: string, over: Partial<ClaimRequest> = {}): ClaimRequest => ({
    spaceId: tenant.spaceId, mailboxId, scopeIds: [scopeId], holder: 'h', holderSession: 's', tokenHash: randomUUID(), leaseExpiresAt: T0 + 30_000, nowMs: T0, ...over,
  });
  /** A PENDING task with its READY delivery in `box`, the task then set to `state` (an ended task's delivery is READY only by a fault; a claim must leave the task as it is). */
  const deliverTask = async (box: Mailbox, scopeId: string, state: Task['state'] = 'PENDING'): Promise<{ task: Task; messageId: string }> =>
    tenant.store.transaction(async (tx) => {
      const messageId = randomUUID();
      const ended = state !== 'PENDING' && state !== 'RUNNING';
      const task: Task = {
        id: randomUUID(), spaceId: tenant.spaceId, taskKey: `k-${randomUUID()}`, fingerprint: 'f'.repeat(64), mailboxId: box.id, scopeId, state, input: { n: 1 },
        requirements: { pools: [], quotas: [], budgets: [] }, workLimit: null, deadline: null, attempts: 0, outcome: null, failureReason: ended ? 'CANCELLED_BY_TEST' : null,
        messageId, groupId: null, tombstoned: false, createdAt: T0, updatedAt: T0,
      };
      await tx.tasks.insert(task);
      await tx.messages.insert(message(box.id, scopeId, { id: messageId, taskId: task.id, payload: { taskId: task.id } }));
      return { task, messageId };
    });
  const seed = async (count: number, scopeId: string): Promise<{ box: Mailbox; ids: string[] }> => {
    const box = mailbox();
    const ids: string[] = [];
    await tenant.store.transaction(async (tx) => {
      await tx.mailboxes.insert(box);
      for (let i = 0; i < count; i++) {
        const m = message(box.id, scopeId, { payload: { i } });
        await tx.messages.insert(m);
        ids.push(m.id);
      }
    });
    return { box, ids };
  };

  it('round-trips a mailbox; a second of one name is refused without writing', async () => {
    const { store, spaceId } = tenant;
    const box = mailbox({ mode: 'INBOX', recipientId: 'agent' });
    expect(await store.transaction((tx) => tx.mailboxes.insert(box))).toBe(true);
    expect(await store.transaction((tx) => tx.mailboxes.insert(mailbox({ name: box.name })))).toBe(false);
    await store.read(async (tx) => {
      expect(await tx.mailboxes.get(spaceId, box.id)).toEqual(box);
      expect(await tx.mailboxes.getByName(spaceId, box.name)).toEqual(box);
      expect(await tx.mailboxes.list(spaceId, null, 10)).toEqual([box]);
      expect(await tx.mailboxes.get(randomUUID(), box.id)).toBeUndefined(); // tenant isolation
    });
  });

  it('getForSend answers the mailbox with its live backlog, capped by its backlogLimit and the space cap', async () => {
    const { store, spaceId } = tenant;
    const scope = randomUUID();
    const { box } = await seed(3, scope);
    const other = await seed(2, scope);
    await store.read(async (tx) => {
      expect(await tx.mailboxes.getForSend(spaceId, box.id, 100)).toEqual({ mailbox: box, live: { mailbox: 3, space: 5 } });
      expect(await tx.mailboxes.getForSend(spaceId, box.id, 4)).toEqual({ mailbox: box, live: { mailbox: 3, space: 4 } });
      expect(await tx.mailboxes.getForSend(spaceId, other.box.id, 100)).toEqual({ mailbox: other.box, live: { mailbox: 2, space: 5 } });
      expect(await tx.mailboxes.getForSend(spaceId, randomUUID(), 100)).toBeUndefined();
      expect(await tx.mailboxes.getForSend(randomUUID(), box.id, 100)).toBeUndefined();
    });
    const small = mailbox({ backlogLimit: 2 });
    await store.transaction(async (tx) => {
      await tx.mailboxes.insert(small);
      for (let i = 0; i < 3; i++) await tx.messages.insert(message(small.id, scope));
    });
    expect((await store.read((tx) => tx.mailboxes.getForSend(spaceId, small.id, 100)))?.live).toEqual({ mailbox: 2, space: 8 });
  });

  it('round-trips messages with increasing seq, finds by workKey, counts the live ones', async () => {
    const { store, spaceId } = tenant;
    const scope = randomUUID();
    const { box, ids } = await seed(2, scope);
    const sent = message(box.id, scope, { workKey: 'k', payload: [1, 'two', null, { deep: true }], deadline: T0 + 5 });
    await store.transaction((tx) => tx.messages.insert(sent));
    await store.read(async (tx) => {
      const all = await tx.messages.list(spaceId, box.id, null, null, 10);
      expect(all.map((m) => m.id)).toEqual([...ids, sent.id]);
      expect(all[0]!.seq).toBeLessThan(all[1]!.seq);
      expect(all[1]!.seq).toBeLessThan(all[2]!.seq);
      const keyed = all[2]!;
      expect(keyed).toEqual({ ...sent, seq: keyed.seq });
      expect(await tx.messages.get(spaceId, sent.id)).toEqual(keyed);
      expect(await tx.messages.getByWorkKey(spaceId, box.id, 'k')).toEqual(keyed);
      expect(await tx.messages.list(spaceId, box.id, null, all[0]!.seq, 10)).toHaveLength(2);
      expect(await tx.messages.countLive(spaceId, box.id, { mailbox: 100, space: 100 })).toEqual({ mailbox: 3, space: 3 });
      // Each count stops at its cap.
      expect(await tx.messages.countLive(spaceId, box.id, { mailbox: 2, space: 1 })).toEqual({ mailbox: 2, space: 1 });
    });
  });

  it('claims FIFO within the mailbox and scope, and the claim writes the lease', async () => {
    const { store, spaceId } = tenant;
    const scope = randomUUID();
    const { box, ids } = await seed(3, scope);
    await store.transaction((tx) => tx.messages.insert(message(box.id, randomUUID())));
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      const claimed = await store.transaction((tx) => tx.messages.claimNext(claimOf(box.id, scope, { holder: `h${i}` })));
      expect(claimed).toEqual({ message: expect.objectContaining({ state: 'CLAIMED', attempt: 1, holder: `h${i}`, holderSession: 's', leaseExpiresAt: T0 + 30_000 }), task: undefined });
      order.push(claimed!.message.id);
    }
    expect(order).toEqual(ids);
    expect(await store.transaction((tx) => tx.messages.claimNext(claimOf(box.id, scope)))).toBeUndefined();
    await store.read(async (tx) => {
      expect(await tx.messages.list(spaceId, box.id, ['CLAIMED'], null, 10)).toHaveLength(3);
      expect(await tx.messages.list(spaceId, box.id, ['READY'], null, 10)).toHaveLength(1);
    });
  });

  it('claimMany claims up to N oldest READY messages in seq order, each with its own token hash', async () => {
    const { store } = tenant;
    const scope = randomUUID();
    const { box, ids } = await seed(5, scope);
    const first = await store.transaction((tx) => tx.messages.claimMany({ ...claimOf(box.id, scope), tokenHashes: ['t1', 't2', 't3'] }));
    expect(first.map((d) => d.message.id)).toEqual(ids.slice(0, 3));
    expect(first.map(({ message: m }) => [m.state, m.attempt, m.holder])).toEqual([['CLAIMED', 1, 'h'], ['CLAIMED', 1, 'h'], ['CLAIMED', 1, 'h']]);
    expect(first.map((d) => d.message.tokenHash).sort()).toEqual(['t1', 't2', 't3']);
    expect(first.map((d) => d.task)).toEqual([undefined, undefined, undefined]);
    const rest = await store.transaction((tx) => tx.messages.claimMany({ ...claimOf(box.id, scope), tokenHashes: ['a', 'b', 'c'] }));
    expect(rest.map((d) => d.message.id)).toEqual(ids.slice(3));
    expect(await store.transaction((tx) => tx.messages.claimMany({ ...claimOf(box.id, scope), tokenHashes: ['z'] }))).toEqual([]);
  });

  it('claimNext moves a task delivery\'s task to RUNNING in the same step, and leaves an ended task as it is', async () => {
    const { store, spaceId } = tenant;
    const scope = randomUUID();
    const { box } = await seed(0, scope);
    const live = await deliverTask(box, scope);
    const ended = await deliverTask(box, scope, 'CANCELLED');
    const first = await store.transaction((tx) => tx.messages.claimNext(claimOf(box.id, scope, { nowMs: T0 + 5 })));
    expect(first?.message).toMatchObject({ id: live.messageId, state: 'CLAIMED', attempt: 1 });
    expect(first?.task).toEqual({ ...live.task, state: 'RUNNING', attempts: 1, updatedAt: T0 + 5 });
    expect(await store.read((tx) => tx.tasks.get(spaceId, live.task.id))).toEqual(first?.task);
    // A second attempt counts: attempts follows the claim's attempt.
    await store.transaction(async (tx) => tx.messages.update({ ...first!.message, state: 'READY', tokenHash: null, holder: null, holderSession: null, leaseExpiresAt: null, updatedAt: T0 + 6 }));
    const again = await store.transaction((tx) => tx.messages.claimNext(claimOf(box.id, scope, { nowMs: T0 + 7 })));
    expect(again).toEqual({ message: expect.objectContaining({ id: live.messageId, attempt: 2 }), task: { ...live.task, state: 'RUNNING', attempts: 2, updatedAt: T0 + 7 } });

    const second = await store.transaction((tx) => tx.messages.claimNext(claimOf(box.id, scope, { nowMs: T0 + 8 })));
    expect(second).toEqual({ message: expect.objectContaining({ id: ended.messageId, state: 'CLAIMED', attempt: 1 }), task: undefined });
    expect(await store.read((tx) => tx.tasks.get(spaceId, ended.task.id))).toEqual(ended.task);
  });

  it('claimMany claims plain messages and task deliveries together: each task moved with its delivery, an ended one left, a plain message without', async () => {
    const { store, spaceId } = tenant;
    const scope = randomUUID();
    const { box, ids } = await seed(1, scope);
    const live = await deliverTask(box, scope);
    const ended = await deliverTask(box, scope, 'EXPIRED');
    await store.transaction((tx) => tx.messages.insert(message(box.id, scope)));
    const claimed = await store.transaction((tx) => tx.messages.claimMany({ ...claimOf(box.id, scope, { nowMs: T0 + 9 }), tokenHashes: ['a', 'b', 'c', 'd', 'e'] }));
    expect(claimed.map((d) => [d.message.id === ids[0] ? 'plain' : d.message.taskId, d.message.state, d.task?.state])).toEqual([
      ['plain', 'CLAIMED', undefined],
      [live.task.id, 'CLAIMED', 'RUNNING'],
      [ended.task.id, 'CLAIMED', undefined],
      [null, 'CLAIMED', undefined],
    ]);
    expect(claimed[1]!.task).toEqual({ ...live.task, state: 'RUNNING', attempts: 1, updatedAt: T0 + 9 });
    await store.read(async (tx) => {
      expect(await tx.tasks.get(spaceId, live.task.id)).toEqual(claimed[1]!.task);
      expect(await tx.tasks.get(spaceId, ended.task.id)).toEqual(ended.task);
    });
  });

  it('claimExpired answers each expired delivery locked with its task as it is now, a plain message without', async () => {
    const { store, spaceId } = tenant;
    const scope = randomUUID();
    const { box, ids } = await seed(1, scope);
    const running = await deliverTask(box, scope);
    const expiring = await deliverTask(box, scope);
    for (const leaseExpiresAt of [T0 + 1_000, T0 + 2_000, T0 + 3_000]) await store.transaction((tx) => tx.messages.claimNext(claimOf(box.id, scope, { leaseExpiresAt, nowMs: T0 + 1 })));
    // The deadline sweep ended one task while its delivery was out: the expiry must see that.
    const ended = { ...expiring.task, state: 'EXPIRED' as const, attempts: 1, failureReason: 'DEADLINE_EXCEEDED', updatedAt: T0 + 2 };
    await store.transaction((tx) => tx.tasks.update(ended));
    const due = await store.transaction((tx) => tx.messages.claimExpired(T0 + 3_000, 10));
    expect(due.map((d) => [d.message.id, d.message.state, d.task])).toEqual([
      [ids[0], 'CLAIMED', undefined],
      [running.messageId, 'CLAIMED', { ...running.task, state: 'RUNNING', attempts: 1, updatedAt: T0 + 1 }],
      [expiring.messageId, 'CLAIMED', ended],
    ]);
    expect(await store.transaction((tx) => tx.messages.claimExpired(T0 + 1_500, 1))).toEqual([due[0]]);
    expect(await store.read((tx) => tx.tasks.get(spaceId, expiring.task.id))).toEqual(ended);
  });

  it('concurrent claimMany calls take every message exactly once', async () => {
    const scope = randomUUID();
    const { box, ids } = await seed(20, scope);
    const batches = await Promise.all(Array.from({ length: 6 }, (_, i) => tenant.store.transaction((tx) => tx.messages.claimMany({ ...claimOf(box.id, scope, { holder: `h${i}` }), tokenHashes: ['1', '2', '3', '4', '5'] }))));
    expect(batches.flat().map((d) => d.message.id).sort()).toEqual([...ids].sort());
  });

  it('lockMany answers the named messages that exist, in id order, once each', async () => {
    const { store, spaceId } = tenant;
    const scope = randomUUID();
    const { ids } = await seed(3, scope);
    const named = [ids[2]!, randomUUID(), ids[0]!, ids[2]!];
    const locked = await store.transaction((tx) => tx.messages.lockMany(spaceId, named));
    expect(locked.map((m) => m.id)).toEqual([ids[0]!, ids[2]!].sort());
    expect(await store.transaction((tx) => tx.messages.lockMany(randomUUID(), ids))).toEqual([]);
  });

  it('claims expired leases only, earliest first', async () => {
    const { store } = tenant;
    const scope = randomUUID();
    const { box } = await seed(2, scope);
    await store.transaction((tx) => tx.messages.claimNext(claimOf(box.id, scope, { leaseExpiresAt: T0 + 10_000 })));
    await store.transaction((tx) => tx.messages.claimNext(claimOf(box.id, scope, { leaseExpiresAt: T0 + 5_000 })));
    expect(await store.transaction((tx) => tx.messages.claimExpired(T0 + 1_000, 10))).toHaveLength(0);
    const due = await store.transaction((tx) => tx.messages.claimExpired(T0 + 10_000, 10));
    expect(due.map((d) => d.message.leaseExpiresAt)).toEqual([T0 + 5_000, T0 + 10_000]);
    expect(due.map((d) => d.task)).toEqual([undefined, undefined]);
  });

  it('census counts READY, CLAIMED and DEAD per mailbox across spaces, the most live first, at most `limit`', async () => {
    const { store, spaceId } = tenant;
    const scope = randomUUID();
    const otherSpace = await tenant.otherSpace();
    const busy = mailbox({ name: 'busy' });
    const poisoned = mailbox({ name: 'poisoned' });
    const quiet = mailbox({ name: 'quiet' });
    const done = mailbox({ name: 'done' });
    const elsewhere = mailbox({ spaceId: otherSpace, name: 'busy' });
    const ended = (state: 'DEAD' | 'ACKED', attempt: number) => ({ state, attempt });
    await store.transaction(async (tx) => {
      for (const box of [busy, poisoned, quiet, done, elsewhere]) await tx.mailboxes.insert(box);
      // busy: 4 READY; the first sent (T0 + 5) is CLAIMED below.
      for (const at of [T0 + 5, T0 + 10, T0 + 20, T0 + 30]) await tx.messages.insert(message(busy.id, scope, { createdAt: at, updatedAt: at }));
      // poisoned: 1 READY, 2 DEAD, 1 ACKED (never counted).
      await tx.messages.insert(message(poisoned.id, scope, { createdAt: T0 + 40, updatedAt: T0 + 40 }));
      for (let i = 0; i < 2; i++) await tx.messages.insert(message(poisoned.id, scope, ended('DEAD', 5)));
      await tx.messages.insert(message(poisoned.id, scope, ended('ACKED', 1)));
      // quiet: nothing live, 1 DEAD. done: only ACKED, so left out.
      await tx.messages.insert(message(quiet.id, scope, ended('DEAD', 5)));
      await tx.messages.insert(message(done.id, scope, ended('ACKED', 1)));
      // Another space's mailbox of the same name: 2 READY.
      for (let i = 0; i < 2; i++) await tx.messages.insert({ ...message(elsewhere.id, scope), spaceId: otherSpace });
    });
    // The oldest READY of busy (T0 + 5) is claimed: its oldest READY is then the one sent at T0 + 10.
    await store.transaction((tx) => tx.messages.claimNext(claimOf(busy.id, scope)));
    const census = await store.read((tx) => tx.messages.census(10));
    expect(census).toEqual([
      { spaceId, mailboxId: busy.id, mailboxName: 'busy', ready: 3, claimed: 1, dead: 0, oldestReadyAt: T0 + 10 },
      { spaceId: otherSpace, mailboxId: elsewhere.id, mailboxName: 'busy', ready: 2, claimed: 0, dead: 0, oldestReadyAt: T0 },
      { spaceId, mailboxId: poisoned.id, mailboxName: 'poisoned', ready: 1, claimed: 0, dead: 2, oldestReadyAt: T0 + 40 },
      { spaceId, mailboxId: quiet.id, mailboxName: 'quiet', ready: 0, claimed: 0, dead: 1, oldestReadyAt: null },
    ]);
    // The cap keeps the mailboxes with the most live messages.
    expect((await store.read((tx) => tx.messages.census(2))).map((c) => c.mailboxId)).toEqual([busy.id, elsewhere.id]);
    expect(await store.read((tx) => tx.messages.census(0))).toEqual([]);
  });

  it('concurrent claims take every message exactly once (20 claims of 10 messages)', async () => {
    const scope = randomUUID();
    const { box, ids } = await seed(10, scope);
    const claims = await Promise.all(Array.from({ length: 20 }, (_, i) => tenant.store.transaction((tx) => tx.messages.claimNext(claimOf(box.id, scope, { holder: `h${i}` })))));
    const claimed = claims.filter((d) => d !== undefined).map((d) => d!.message.id);
    expect(claimed.sort()).toEqual([...ids].sort());
  });

  it('sweepers on several servers expire each lease once', async () => {
    const { store, spaceId } = tenant;
    const scope = randomUUID();
    const { box } = await seed(6, scope);
    const random = new SeededRandom(3);
    const ctx = (tx: Tx) => ({ tx, spaceId, nowMs: T0, random, limits: defaultSpaceLimits });
    for (let i = 0; i < 6; i++) await store.transaction((tx) => deliveries.claimNext(ctx(tx), { mailboxId: box.id, scopeIds: [scope], holder: 'h', holderSession: 's', leaseSeconds: 5 }));
    const counts = await Promise.all(Array.from({ length: 4 }, () => store.transaction((tx) => deliveries.expireLeases(tx, T0 + 5_000, 2, new SeededRandom(7)))));
    const more = await store.transaction((tx) => deliveries.expireLeases(tx, T0 + 5_000, 100, new SeededRandom(7)));
    expect(counts.reduce((a, b) => a + b, 0) + more).toBe(6);
    const journal = await journalWhen(store, spaceId, (events) => events.filter((e) => e.type === 'message.lease_expired').length >= 6);
    const expired = journal.filter((e) => e.type === 'message.lease_expired').map((e) => String(e.data.messageId));
    expect(new Set(expired).size).toBe(6);
    expect(expired).toHaveLength(6);
    expect((await store.read((tx) => tx.messages.countLive(spaceId, box.id, { mailbox: 100, space: 100 }))).mailbox).toBe(6);
    expect((await store.read((tx) => tx.messages.list(spaceId, box.id, ['READY'], null, 10))).length).toBe(6);
  });
});
