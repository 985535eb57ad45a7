import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Claim, DeliveryAttempt, Mailbox, MessageState, NewMessage, Org, SpaceCutoff, Store, Task, TaskState, Tx } from '@baton/core';
import { storeTargets } from './support/databases';

/**
 * Retention's purge methods (docs/design/0017-retention.md) on every store: each removes what is at or before its
 * space's cutoff and past its final state, in batches of at most `limit`, and nothing younger,
 * nothing live, nothing of a space it was not given.
 */
const T0 = 1_700_000_000_000;

describe.each(storeTargets())('retention store conformance on $name', (target) => {
  let store: Store;
  let closeStore: () => Promise<void>;

  beforeAll(async () => {
    ({ store, close: closeStore } = await target.open());
  });
  afterAll(async () => closeStore());

  /** A fresh organization with one space and one mailbox in it. */
  async function tenant(plan: Org['plan'] = 'FREE'): Promise<{ spaceId: string; box: Mailbox }> {
    const orgId = randomUUID();
    const spaceId = randomUUID();
    const box: Mailbox = { id: randomUUID(), spaceId, name: 'box', mode: 'WORK', recipientId: null, backlogLimit: 1000, createdAt: T0, updatedAt: T0 };
    await store.transaction(async (tx) => {
      await tx.orgs.insert({ id: orgId, name: 'o', plan, limits: null, createdAt: T0, updatedAt: T0 });
      await tx.spaces.insert({ id: spaceId, orgId, name: 's', limits: null, createdAt: T0, updatedAt: T0 });
      await tx.mailboxes.insert(box);
    });
    return { spaceId, box };
  }

  /** Runs a purge until a batch comes back short, checking each batch's bound: the total purged. */
  async function drain(batch: (tx: Tx, limit: number) => Promise<number>, limit = 2): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await store.transaction((tx) => batch(tx, limit));
      expect(n).toBeLessThanOrEqual(limit);
      total += n;
      if (n < limit) return total;
    }
  }

  describe('tasks.tombstoneFinished', () => {
    const task = (spaceId: string, box: Mailbox, state: TaskState, updatedAt: number): Task => ({
      id: randomUUID(), spaceId, taskKey: `k-${randomUUID()}`, fingerprint: 'f'.repeat(64), mailboxId: box.id, scopeId: randomUUID(), state, input: { secret: 'in' },
      requirements: { pools: [], quotas: [], budgets: [] }, workLimit: null, deadline: null, attempts: 1,
      outcome: state === 'SUCCEEDED' || state === 'FAILED' ? { out: 1 } : null, failureReason: state === 'FAILED' ? 'NACKED' : state === 'CANCELLED' ? 'stop' : null,
      messageId: null, groupId: null, tombstoned: false, createdAt: T0 - 10_000, updatedAt,
    });

    it('tombstones finished tasks at or before the cutoff, keeps state and reason, and leaves live, younger and other spaces\' tasks', async () => {
      const { spaceId, box } = await tenant();
      const other = await tenant();
      const due = [
        task(spaceId, box, 'SUCCEEDED', T0 - 2),
        task(spaceId, box, 'FAILED', T0 - 1),
        task(spaceId, box, 'CANCELLED', T0),
        task(spaceId, box, 'EXPIRED', T0),
      ];
      const kept = [
        task(spaceId, box, 'PENDING', T0 - 5),
        task(spaceId, box, 'RUNNING', T0 - 5),
        task(spaceId, box, 'SUCCEEDED', T0 + 1),
        task(other.spaceId, other.box, 'SUCCEEDED', T0 - 5),
      ];
      await store.transaction(async (tx) => {
        for (const t of [...due, ...kept]) await tx.tasks.insert(t);
      });
      const cutoffs: SpaceCutoff[] = [{ spaceId, cutoffMs: T0 }];

      expect(await drain((tx, limit) => tx.tasks.tombstoneFinished(cutoffs, limit))).toBe(4);
      for (const t of due) {
        expect(await store.read((tx) => tx.tasks.get(t.spaceId, t.id))).toEqual({ ...t, input: null, outcome: null, tombstoned: true });
      }
      for (const t of kept) expect(await store.read((tx) => tx.tasks.get(t.spaceId, t.id))).toEqual(t);
      // Already tombstoned: a second sweep finds nothing.
      expect(await store.transaction((tx) => tx.tasks.tombstoneFinished(cutoffs, 10))).toBe(0);
    });

    it('a tombstoned task is still found by key, listed and read with its state', async () => {
      const { spaceId, box } = await tenant();
      const t = task(spaceId, box, 'SUCCEEDED', T0);
      await store.transaction((tx) => tx.tasks.insert(t));
      await store.transaction((tx) => tx.tasks.tombstoneFinished([{ spaceId, cutoffMs: T0 }], 10));
      const tombstone = { ...t, input: null, outcome: null, tombstoned: true };
      expect(await store.read((tx) => tx.tasks.getByKey(spaceId, t.taskKey))).toEqual(tombstone);
      expect(await store.read((tx) => tx.tasks.list(spaceId, null, ['SUCCEEDED'], null, 10))).toEqual([tombstone]);
    });

    it('passes over a task another transaction holds, without waiting for it (PostgreSQL; the others run one transaction at a time)', async () => {
      if (!target.concurrentTransactions) return;
      const { spaceId, box } = await tenant();
      const held = task(spaceId, box, 'SUCCEEDED', T0);
      const free = task(spaceId, box, 'FAILED', T0);
      await store.transaction(async (tx) => {
        for (const t of [held, free]) await tx.tasks.insert(t);
      });
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      const holder = store.transaction(async (tx) => {
        await tx.tasks.get(spaceId, held.id, { forUpdate: true });
        locked();
        await released;
      });
      await isLocked;
      expect(await store.transaction((tx) => tx.tasks.tombstoneFinished([{ spaceId, cutoffMs: T0 }], 10))).toBe(1);
      expect((await store.read((tx) => tx.tasks.get(spaceId, free.id)))?.tombstoned).toBe(true);
      expect((await store.read((tx) => tx.tasks.get(spaceId, held.id)))?.tombstoned).toBe(false);
      release();
      await holder;
      expect(await store.transaction((tx) => tx.tasks.tombstoneFinished([{ spaceId, cutoffMs: T0 }], 10))).toBe(1);
    });
  });

  describe('messages.purgeFinished', () => {
    const message = (spaceId: string, box: Mailbox, state: MessageState, updatedAt: number): NewMessage => {
      const claimed = state === 'CLAIMED';
      return {
        id: randomUUID(), spaceId, mailboxId: box.id, scopeId: randomUUID(), payload: { secret: 'p' }, workKey: null, deadline: null, taskId: null, state, attempt: 1,
        tokenHash: claimed ? 'ab'.repeat(32) : null, holder: claimed || state === 'ACKED' ? 'h' : null, holderSession: claimed || state === 'ACKED' ? 's' : null,
        leaseExpiresAt: claimed ? T0 + 30_000 : null, result: null, requirements: null, claimed: null, createdAt: T0 - 10_000, updatedAt,
      };
    };

    it('deletes finished messages at or before the cutoff and no live, younger or other space\'s one', async () => {
      const { spaceId, box } = await tenant();
      const other = await tenant();
      const due = [message(spaceId, box, 'ACKED', T0 - 2), message(spaceId, box, 'DEAD', T0 - 1), message(spaceId, box, 'CANCELLED', T0)];
      const kept = [
        message(spaceId, box, 'READY', T0 - 5),
        message(spaceId, box, 'CLAIMED', T0 - 5),
        message(spaceId, box, 'ACKED', T0 + 1),
        message(other.spaceId, other.box, 'ACKED', T0 - 5),
      ];
      await store.transaction(async (tx) => {
        for (const m of [...due, ...kept]) await tx.messages.insert(m);
      });

      expect(await drain((tx, limit) => tx.messages.purgeFinished([{ spaceId, cutoffMs: T0 }], limit))).toBe(3);
      for (const m of due) expect(await store.read((tx) => tx.messages.get(m.spaceId, m.id))).toBeUndefined();
      for (const m of kept) expect((await store.read((tx) => tx.messages.get(m.spaceId, m.id)))?.state).toBe(m.state);
    });
  });

  describe('claims.purgeEnded', () => {
    /** The key's next claim, its fencing sequence advanced as an acquire would. */
    async function claim(spaceId: string, claimKey: string, state: Claim['state'], endedAt: number | null): Promise<Claim> {
      return store.transaction(async (tx) => {
        const key = await tx.claims.lockKey(spaceId, claimKey, T0 - 10_000);
        const fencingToken = key.lastFencingToken + 1;
        await tx.claims.advanceKey({ ...key, lastFencingToken: fencingToken, updatedAt: T0 - 10_000 });
        const c: Claim = {
          id: randomUUID(), spaceId, claimKey, scopeId: randomUUID(), holder: 'h', holderSessionHash: 'ab'.repeat(32), tokenHash: 'cd'.repeat(32), tokenNonce: 'n',
          fencingToken, state, leaseExpiresAt: endedAt ?? T0 + 30_000, endedAt, createdAt: T0 - 10_000, updatedAt: endedAt ?? T0 - 10_000,
        };
        await tx.claims.insert(c);
        return c;
      });
    }

    it('deletes claims that ended at or before the cutoff, keeps held, younger and other spaces\' ones, and the key\'s fencing sequence', async () => {
      const { spaceId } = await tenant();
      const other = await tenant();
      const due = [await claim(spaceId, 'a', 'RELEASED', T0 - 2), await claim(spaceId, 'a', 'EXPIRED', T0 - 1), await claim(spaceId, 'b', 'RELEASED', T0)];
      const kept = [await claim(spaceId, 'a', 'HELD', null), await claim(spaceId, 'b', 'EXPIRED', T0 + 1), await claim(other.spaceId, 'a', 'RELEASED', T0 - 5)];

      expect(await drain((tx, limit) => tx.claims.purgeEnded([{ spaceId, cutoffMs: T0 }], limit))).toBe(3);
      for (const c of due) expect(await store.read((tx) => tx.claims.get(c.spaceId, c.id))).toBeUndefined();
      for (const c of kept) expect((await store.read((tx) => tx.claims.get(c.spaceId, c.id)))?.state).toBe(c.state);
      // The next claim of a purged key still gets the next fencing token, never a reused one.
      const key = await store.transaction((tx) => tx.claims.lockKey(spaceId, 'a', T0));
      expect(key.lastFencingToken).toBe(3);
    });
  });

  describe('events.purgeBefore', () => {
    const event = (n: number) => ({ type: 'budget.created', aggregateType: 'budget', aggregateId: `b${n}`, scopeId: null, data: { n } });
    const append = (spaceId: string, occurredAt: number, n: number) => store.transaction((tx) => tx.events.append(spaceId, occurredAt, [event(n)]));
    /**
     * The space's journal once it holds `length` events. On PostgreSQL an event is readable once
     * every older writer on the server has ended (other test files share it), so this polls.
     */
    const journal = async (spaceId: string, length: number) => {
      for (let attempt = 0; ; attempt++) {
        const events = await store.read((tx) => tx.events.listAfter(spaceId, '0', 100));
        if (events.length === length || attempt >= 100) return events;
        await new Promise((r) => setTimeout(r, 50));
      }
    };

    it('deletes the start of the journal up to the cutoff, records how far, and leaves younger events and other spaces', async () => {
      const { spaceId } = await tenant();
      const other = await tenant();
      for (const [at, n] of [[T0 - 2, 1], [T0 - 1, 2], [T0, 3], [T0 + 1, 4]] as const) await append(spaceId, at, n);
      await append(other.spaceId, T0 - 5, 9);
      const before = await journal(spaceId, 4);
      expect(before).toHaveLength(4);
      expect(await journal(other.spaceId, 1)).toHaveLength(1);
      expect(await store.read((tx) => tx.events.purgedThrough(spaceId))).toBe('0');

      expect(await drain((tx, limit) => tx.events.purgeBefore([{ spaceId, cutoffMs: T0 }], limit))).toBe(3);
      expect((await journal(spaceId, 1)).map((e) => e.data.n)).toEqual([4]);
      expect(await store.read((tx) => tx.events.purgedThrough(spaceId))).toBe(before[2]!.eventId);
      expect((await journal(other.spaceId, 1)).map((e) => e.data.n)).toEqual([9]);
      expect(await store.read((tx) => tx.events.purgedThrough(other.spaceId))).toBe('0');

      // A later pass moves the start on, never back.
      expect(await store.transaction((tx) => tx.events.purgeBefore([{ spaceId, cutoffMs: T0 + 1 }], 10))).toBe(1);
      expect(await store.read((tx) => tx.events.purgedThrough(spaceId))).toBe(before[3]!.eventId);
      expect(await store.transaction((tx) => tx.events.purgeBefore([{ spaceId, cutoffMs: T0 + 1 }], 10))).toBe(0);
      expect(await store.read((tx) => tx.events.purgedThrough(spaceId))).toBe(before[3]!.eventId);
    });

    it('a space whose oldest event is younger than its cutoff loses nothing', async () => {
      const { spaceId } = await tenant();
      for (let n = 1; n <= 3; n++) await append(spaceId, T0 + n, n);
      expect(await journal(spaceId, 3)).toHaveLength(3);
      expect(await store.transaction((tx) => tx.events.purgeBefore([{ spaceId, cutoffMs: T0 }], 10))).toBe(0);
      expect(await journal(spaceId, 3)).toHaveLength(3);
    });
  });

  describe('deliveryAttempts.purgeUntil', () => {
    const attempt = (spaceId: string, attemptedAt: number): DeliveryAttempt => ({
      id: randomUUID(), spaceId, destinationId: randomUUID(), eventId: '1', attempt: 1, status: 'SUCCEEDED', httpStatus: 200, error: null, responseBody: null,
      durationMs: 5, attemptedAt, nextAttemptAt: null,
    });

    it('deletes attempts made at or before the cutoff, of any space, and no younger one', async () => {
      const a = await tenant();
      const b = await tenant();
      // Far in the past, so no other test's attempts are this old.
      const cutoffMs = T0 - 1_000_000_000;
      const due = [attempt(a.spaceId, cutoffMs - 1), attempt(b.spaceId, cutoffMs)];
      const young = attempt(a.spaceId, cutoffMs + 1);
      await store.transaction(async (tx) => {
        for (const row of [...due, young]) await tx.deliveryAttempts.insert(row);
      });
      expect(await drain((tx, limit) => tx.deliveryAttempts.purgeUntil(cutoffMs, limit), 1)).toBe(2);
      const left = async (spaceId: string) => (await store.read((tx) => tx.deliveryAttempts.list(spaceId, {}, null, 10))).map((r) => r.id);
      expect(await left(a.spaceId)).toEqual([young.id]);
      expect(await left(b.spaceId)).toEqual([]);
    });
  });

  describe('retention.spacesAfter', () => {
    it('pages through spaces in id order with their organization\'s plan', async () => {
      const mine = new Map<string, Org['plan']>();
      for (const plan of ['FREE', 'SCALE', 'TEAM'] as const) mine.set((await tenant(plan)).spaceId, plan);
      const seen: { spaceId: string; plan: Org['plan'] }[] = [];
      let after: string | null = null;
      for (;;) {
        const page = await store.read((tx) => tx.retention.spacesAfter(after, 2));
        expect(page.length).toBeLessThanOrEqual(2);
        for (const s of page) seen.push({ spaceId: s.spaceId, plan: s.org.plan });
        if (page.length < 2) break;
        after = page.at(-1)!.spaceId;
      }
      const ids = seen.map((s) => s.spaceId);
      expect(ids).toEqual([...ids].sort());
      expect(new Set(ids).size).toBe(ids.length);
      for (const [spaceId, plan] of mine) expect(seen).toContainEqual({ spaceId, plan });
    });
  });
});
