import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ManualClock, MemoryStore, type Org } from '@baton/core';
import { RetentionSweep } from '@baton-coordination/server/host/retention';

/**
 * The sweep's bounds (server/src/host/retention.ts): a pass covers one page of spaces and a few
 * batches of each kind, so a backlog drains over passes, each space with its own plan's window.
 */
const dayMs = 24 * 60 * 60 * 1000;
const T0 = Date.UTC(2026, 0, 1);

describe('retention sweep', () => {
  async function spaceWithJournal(store: MemoryStore, plan: Org['plan'], events: number): Promise<string> {
    const orgId = randomUUID();
    const spaceId = randomUUID();
    await store.transaction(async (tx) => {
      await tx.orgs.insert({ id: orgId, name: 'o', plan, limits: null, createdAt: T0, updatedAt: T0 });
      await tx.spaces.insert({ id: spaceId, orgId, name: 's', limits: null, createdAt: T0, updatedAt: T0 });
      for (let n = 0; n < events; n++) {
        await tx.events.append(spaceId, T0, [{ type: 'budget.created', aggregateType: 'budget', aggregateId: `b${n}`, scopeId: null, data: {} }]);
      }
    });
    return spaceId;
  }
  const journalLength = (store: MemoryStore, spaceId: string) => store.read(async (tx) => (await tx.events.listAfter(spaceId, '0', 1000)).length);

  it('drains over several passes, one page of spaces and a few batches at a time, and wraps around', async () => {
    const store = new MemoryStore();
    const clock = new ManualClock(T0);
    const spaces = [await spaceWithJournal(store, 'FREE', 5), await spaceWithJournal(store, 'FREE', 5), await spaceWithJournal(store, 'FREE', 5)];
    const sweep = new RetentionSweep(store, clock, { spacesPerPass: 2, batchSize: 2, batchesPerPass: 1 });
    clock.advance(30 * dayMs);

    const lengths = () => Promise.all(spaces.map((s) => journalLength(store, s)));
    await sweep.pass();
    // One batch of at most 2 events across the first page (two spaces): the rest waits.
    expect((await lengths()).reduce((a, b) => a + b)).toBe(13);
    for (let pass = 0; pass < 20; pass++) await sweep.pass();
    expect(await lengths()).toEqual([0, 0, 0]);
  });

  it('takes each space\'s window from its own organization\'s plan', async () => {
    const store = new MemoryStore();
    const clock = new ManualClock(T0);
    const free = await spaceWithJournal(store, 'FREE', 1);
    const scale = await spaceWithJournal(store, 'SCALE', 1);
    const sweep = new RetentionSweep(store, clock);
    clock.advance(30 * dayMs);
    await sweep.pass();
    expect([await journalLength(store, free), await journalLength(store, scale)]).toEqual([0, 1]);
    clock.advance(60 * dayMs - 1);
    await sweep.pass();
    expect(await journalLength(store, scale)).toBe(1);
    clock.advance(1);
    await sweep.pass();
    expect(await journalLength(store, scale)).toBe(0);
  });
});
