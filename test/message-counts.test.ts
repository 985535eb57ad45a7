import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Mailbox, Message, NewMessage, Store } from '@baton/core';
import type { SqlStore } from '@baton-coordination/server/store/sql/sql-store';
import { storeTargets, useTenantStore } from './support/databases';

/**
 * message_counts (migration 028) is kept by statement triggers on messages, so that a submit or a
 * send never counts its backlog. Whatever mix of sends, batch claims, acks, nacks, deaths and
 * retention purges a store goes through, the counts it answers (getForSend, countLive, census,
 * the organization's load) must equal a count of the rows themselves. A planted bug (the update
 * trigger disabled) shows the check sees a drift.
 */
const T0 = 1_700_000_000_000;
const boxes = 2;

type Step =
  | { kind: 'send'; box: number; task: boolean; count: number }
  | { kind: 'claim'; box: number; count: number }
  | { kind: 'finish'; pick: number; to: 'ACKED' | 'DEAD' | 'READY' }
  | { kind: 'purge' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('send' as const), box: fc.nat(boxes - 1), task: fc.boolean(), count: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ kind: fc.constant('claim' as const), box: fc.nat(boxes - 1), count: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ kind: fc.constant('finish' as const), pick: fc.nat(), to: fc.constantFrom('ACKED' as const, 'DEAD' as const, 'READY' as const) }),
  fc.constant({ kind: 'purge' as const }),
);

interface Truth {
  live: number[];
  claimed: number;
  liveTasks: number;
  dead: number;
}

describe.each(storeTargets().filter((t) => t.name !== 'memory'))('message counts on $name', (target) => {
  const tenant = useTenantStore(target, T0);

  const newMailbox = (): Mailbox => ({
    id: randomUUID(), spaceId: tenant.spaceId, name: `box-${randomUUID()}`, mode: 'WORK', recipientId: null, backlogLimit: 1000, createdAt: T0, updatedAt: T0,
  });
  const newMessage = (mailboxId: string, task: boolean): NewMessage => ({
    id: randomUUID(), spaceId: tenant.spaceId, mailboxId, scopeId: 'scope', payload: {}, workKey: null, deadline: null, taskId: task ? randomUUID() : null, state: 'READY', attempt: 0,
    tokenHash: null, holder: null, holderSession: null, leaseExpiresAt: null, result: null, requirements: null, claimed: null, createdAt: T0, updatedAt: T0,
  });

  async function apply(store: Store, mailboxes: Mailbox[], s: Step): Promise<void> {
    const spaceId = tenant.spaceId;
    if (s.kind === 'send') {
      await store.transaction(async (tx) => {
        for (let i = 0; i < s.count; i++) await tx.messages.insert(newMessage(mailboxes[s.box]!.id, s.task));
      });
    } else if (s.kind === 'claim') {
      const tokenHashes = Array.from({ length: s.count }, () => randomUUID());
      await store.transaction((tx) =>
        tx.messages.claimMany({ spaceId, mailboxId: mailboxes[s.box]!.id, scopeIds: ['scope'], holder: 'h', holderSession: 's', tokenHashes, leaseExpiresAt: T0 + 60_000, nowMs: T0 }),
      );
    } else if (s.kind === 'finish') {
      await store.transaction(async (tx) => {
        const claimed = (await Promise.all(mailboxes.map((b) => tx.messages.list(spaceId, b.id, ['CLAIMED'], null, 100)))).flat();
        if (claimed.length === 0) return;
        const m = claimed[s.pick % claimed.length]!;
        const lease = { tokenHash: null, holder: null, holderSession: null, leaseExpiresAt: null, claimed: null };
        await tx.messages.update({ ...m, ...lease, state: s.to, updatedAt: T0 + 1 } satisfies Message);
      });
    } else {
      await store.transaction((tx) => tx.messages.purgeFinished([{ spaceId, cutoffMs: T0 + 1 }], 3));
    }
  }

  async function truthOf(store: Store, mailboxes: Mailbox[]): Promise<Truth> {
    return store.read(async (tx) => {
      const all = (await Promise.all(mailboxes.map((b) => tx.messages.list(tenant.spaceId, b.id, null, null, 10_000)))).flat();
      const live = (m: { state: string }): boolean => m.state === 'READY' || m.state === 'CLAIMED';
      return {
        live: mailboxes.map((b) => all.filter((m) => m.mailboxId === b.id && live(m)).length),
        claimed: all.filter((m) => m.state === 'CLAIMED').length,
        liveTasks: all.filter((m) => live(m) && m.taskId !== null).length,
        dead: all.filter((m) => m.state === 'DEAD').length,
      };
    });
  }

  async function expectCountsMatch(store: Store, mailboxes: Mailbox[]): Promise<void> {
    const truth = await truthOf(store, mailboxes);
    const space = truth.live.reduce((a, b) => a + b, 0);
    await store.read(async (tx) => {
      for (const [i, box] of mailboxes.entries()) {
        expect(await tx.mailboxes.getForSend(tenant.spaceId, box.id, 10_000)).toEqual({ mailbox: box, live: { mailbox: truth.live[i], space } });
        expect(await tx.messages.countLive(tenant.spaceId, box.id, { mailbox: 10_000, space: 10_000 })).toEqual({ mailbox: truth.live[i], space });
      }
      expect(await tx.messages.countLive(tenant.spaceId, mailboxes[0]!.id, { mailbox: 1, space: 1 })).toEqual({ mailbox: Math.min(1, truth.live[0]!), space: Math.min(1, space) });
      const load = (await tx.usage.loadOf([tenant.orgId], T0)).get(tenant.orgId);
      expect({ activeTasks: load?.activeTasks ?? 0, liveLeases: load?.liveLeases ?? 0 }).toEqual({ activeTasks: truth.liveTasks, liveLeases: truth.claimed });
      const census = (await tx.messages.census(100)).filter((c) => c.spaceId === tenant.spaceId);
      expect(census.reduce((n, c) => n + c.dead, 0)).toBe(truth.dead);
      expect(census.reduce((n, c) => n + c.ready + c.claimed, 0)).toBe(space);
    });
  }

  async function runSteps(steps: Step[]): Promise<void> {
    const store = tenant.store;
    const mailboxes = Array.from({ length: boxes }, newMailbox);
    await store.transaction(async (tx) => {
      for (const box of mailboxes) await tx.mailboxes.insert(box);
    });
    for (const s of steps) await apply(store, mailboxes, s);
    await expectCountsMatch(store, mailboxes);
    // The next run starts from zero: finish and purge everything this one left.
    await (store as SqlStore).driver.exec(`DELETE FROM messages WHERE space_id = '${tenant.spaceId}'`);
    await expectCountsMatch(store, mailboxes);
  }

  it('answers the counts of the rows themselves after any mix of sends, claims, finishes and purges', async () => {
    await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), runSteps), { numRuns: 15 });
  });

  it('sees a drift when the counts stop following the rows (planted: the update trigger disabled)', async () => {
    const driver = (tenant.store as SqlStore).driver;
    await driver.exec('ALTER TABLE messages DISABLE TRIGGER messages_counted_on_update');
    await expect(runSteps([{ kind: 'send', box: 0, task: true, count: 2 }, { kind: 'claim', box: 0, count: 1 }])).rejects.toThrow();
  });
});
