import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Budget, Store, Tx } from '@baton/core';
import { createScratchDatabase, openStore, type ScratchDatabase } from '@baton-coordination/server';
import { ForeignWriterWatch, untilJournalReadable } from './journal-horizon';

const T0 = 1_700_000_000_000;

const append = (tx: Tx, spaceId: string): Promise<void> =>
  tx.events.append(spaceId, T0, [{ type: 'test.appended', aggregateType: 'test', aggregateId: randomUUID(), scopeId: null, data: {} }]);

function budget(spaceId: string): Budget {
  return { id: randomUUID(), spaceId, name: randomUUID(), currency: 'USD', scale: 2, limitMinor: 0n, availableMinor: 0n, reservedMinor: 0n, settledMinor: 0n, createdAt: T0, updatedAt: T0 };
}

/** A transaction that takes an xid (a row lock) and stays open until released: another run's writer, say. */
function holdXid(store: Store, b: Budget): { ready: Promise<void>; release(): void; done: Promise<void> } {
  let ready!: () => void;
  let release!: () => void;
  const readyP = new Promise<void>((r) => (ready = r));
  const held = new Promise<void>((r) => (release = r));
  const done = store.transaction(async (tx) => {
    await tx.budgets.get(b.spaceId, b.id, { forUpdate: true });
    ready();
    await held;
  });
  return { ready: readyP, release, done };
}

describe('untilJournalReadable', () => {
  it('returns at once where the store has no shared horizon (memory)', async () => {
    const store = await openStore({ kind: 'memory' });
    const spaceId = randomUUID();
    await store.transaction((tx) => append(tx, spaceId));
    expect(await untilJournalReadable(store, spaceId, 0)).toEqual([]);
  });
});

describe.runIf(process.env.DATABASE_URL)('untilJournalReadable on PostgreSQL', () => {
  let scratch: ScratchDatabase;
  let store: Store;

  beforeAll(async () => {
    scratch = await createScratchDatabase(process.env.DATABASE_URL!, 'baton_test');
    store = await openStore({ kind: 'postgres', url: scratch.url });
  });

  afterAll(async () => {
    await store?.close();
    await scratch?.drop();
  });

  it('names the held-back events when an older transaction stays open, and waits for it to end', async () => {
    const spaceId = randomUUID();
    const b = budget(spaceId);
    await store.transaction((tx) => tx.budgets.insert(b));
    const holder = holdXid(store, b);
    await holder.ready;
    await store.transaction((tx) => append(tx, spaceId));

    expect(await untilJournalReadable(store, spaceId, 100)).toEqual([
      'environment: 1 committed events still behind the journal horizon after 100 ms: a transaction elsewhere on the PostgreSQL server stays open',
    ]);
    const waited = untilJournalReadable(store, spaceId, 10_000);
    setTimeout(holder.release, 50);
    expect(await waited).toEqual([]);
    await holder.done;
  });

  it('a failed run names how long another database kept a transaction with an xid open', async () => {
    const other = await createScratchDatabase(process.env.DATABASE_URL!, 'baton_test');
    const otherStore = await openStore({ kind: 'postgres', url: other.url });
    try {
      const b = budget(randomUUID());
      await otherStore.transaction((tx) => tx.budgets.insert(b));
      const watch = new ForeignWriterWatch(store, true);
      const quiet = new ForeignWriterWatch(store, false);
      const holder = holdXid(otherStore, b);
      await holder.ready;
      await new Promise((resolve) => setTimeout(resolve, 400));
      holder.release();
      await holder.done;
      watch.stop();
      const [line] = watch.note();
      const heldMs = Number(/stayed open up to (\d+) ms/.exec(line ?? '')?.[1]);
      expect(heldMs).toBeGreaterThanOrEqual(300);
      expect(quiet.note()).toEqual([]);
    } finally {
      await otherStore.close();
      await other.drop();
    }
  });
});
