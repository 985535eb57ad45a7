import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Budget, JournalEvent, Task, Tx } from '@baton/core';
import { migrate } from '@baton-coordination/server/store/sql/migrate';
import { PgDriver } from '@baton-coordination/server/store/sql/pg-driver';
import { decodePosition, listAfterSql, readJournal, type JournalReadMode } from '@baton-coordination/server/store/sql/repositories/events';
import { sqlRepositories } from '@baton-coordination/server/store/sql/repositories/index';
import { SqlStore } from '@baton-coordination/server/store/sql/sql-store';
import { eventsBehindHorizon } from '@baton-coordination/server/store/journal-horizon';
import { createTestDatabase, postgresUrl, type TestDatabase } from './support/databases';

/**
 * The journal promise (docs/design/0013-events-and-watch.md): a reader that follows nextCursor never skips a committed
 * event, also when transactions commit out of id order; and the order is causal, an event sorts
 * after every commit its transaction saw. Only real PostgreSQL runs transactions side by side,
 * so only it can show this. Each property is also checked against a weaker read or a planted
 * position (server/src/store/sql/repositories/events.ts), to show that the test notices.
 *
 * The store holds a transaction's appends to its COMMIT (coalesced-writes.ts). The reader's
 * guard must not rely on that, so most cases here append through a transaction that sends each
 * append at once, mid-transaction (`rawTransaction`); the causal-order case goes through the store.
 */

const T0 = 1_700_000_000_000;

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** mulberry32: a small seeded generator, so a failing stress run can be replayed by its seed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe.runIf(postgresUrl())('event journal on PostgreSQL', () => {
  let db: TestDatabase;
  let driver: PgDriver;
  let store: SqlStore;

  beforeAll(async () => {
    db = await createTestDatabase();
    driver = new PgDriver(db.url, { max: 24 });
    await migrate(driver);
    store = new SqlStore(driver);
  });

  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  /** A transaction whose appends go out as they are made, not held to the COMMIT as the store's are. */
  const rawTransaction = <T>(work: (tx: Tx) => Promise<T>): Promise<T> => driver.transaction((q) => work(sqlRepositories(q)));

  type Reader = (spaceId: string, after: string, limit: number) => Promise<JournalEvent[]>;
  /** What the service reads through: the store's listAfter. */
  const journal: Reader = (spaceId, after, limit) => store.read((tx) => tx.events.listAfter(spaceId, after, limit));
  /** The weaker reads, for showing what they would skip. */
  const weaker =
    (mode: Exclude<JournalReadMode, 'horizon'>): Reader =>
    (spaceId, after, limit) =>
      readJournal(driver, spaceId, after, limit, mode);
  const read = (reader: Reader, spaceId: string, after: string, limit = 1000): Promise<JournalEvent[]> => reader(spaceId, after, limit);
  const names = (events: JournalEvent[]): string[] => events.map((e) => e.aggregateId);

  /** A budget row per writer: updating it first gives a transaction its xid before it appends. */
  async function writerBudget(spaceId: string, on: SqlStore = store): Promise<Budget> {
    const b: Budget = {
      id: randomUUID(),
      spaceId,
      name: randomUUID(),
      currency: 'USD',
      scale: 2,
      limitMinor: 0n,
      availableMinor: 0n,
      reservedMinor: 0n,
      settledMinor: 0n,
      createdAt: T0,
      updatedAt: T0,
    };
    await on.transaction((tx) => tx.budgets.insert(b));
    return b;
  }

  // Writes are pipelined (server/src/store/sql/driver.ts): awaiting one does not mean it ran. A
  // read sent behind it answers only once it has, which the interleavings below rely on.
  const flushed = (tx: Tx, spaceId: string): Promise<unknown> => tx.idempotency.get(spaceId, 'pipeline-flush');

  async function touch(tx: Tx, b: Budget): Promise<void> {
    const row = (await tx.budgets.get(b.spaceId, b.id, { forUpdate: true }))!;
    await tx.budgets.update({ ...row, updatedAt: row.updatedAt + 1 });
    await flushed(tx, b.spaceId);
  }

  const append = async (tx: Tx, spaceId: string, name: string): Promise<void> => {
    await tx.events.append(spaceId, T0, [{ type: 'test.appended', aggregateType: 'test', aggregateId: name, scopeId: null, data: {} }]);
    await flushed(tx, spaceId);
  };

  /**
   * What `reader` returns once the horizon lets it: other test files share this server, and
   * their transactions can hold the horizon back for a moment.
   */
  async function eventually(reader: Reader, spaceId: string, after: string, expected: string[]): Promise<JournalEvent[]> {
    await expect.poll(async () => names(await read(reader, spaceId, after)), { timeout: 10_000, interval: 10 }).toEqual(expected);
    return read(reader, spaceId, after);
  }

  /** Starts a transaction that runs `steps` and then stays open until the returned release(). */
  function openTransaction(steps: (tx: Tx) => Promise<void>): { ready: Promise<void>; release(): void; done: Promise<void> } {
    const ready = deferred();
    const hold = deferred();
    const done = rawTransaction(async (tx) => {
      await steps(tx);
      ready.resolve();
      await hold.promise;
    });
    return { ready: ready.promise, release: hold.resolve, done };
  }

  it('hides a commit while an event with a smaller id is still open, then shows both in order', async () => {
    const spaceId = randomUUID();
    const a = openTransaction((tx) => append(tx, spaceId, 'A'));
    await a.ready;
    await store.transaction((tx) => append(tx, spaceId, 'B'));

    // B has committed with the larger id; A, with the smaller one, may still commit.
    expect(names(await read(journal, spaceId, '0'))).toEqual([]);
    const unguarded = await read(weaker('unguarded'), spaceId, '0');
    expect(names(unguarded)).toEqual(['B']);

    a.release();
    await a.done;
    await eventually(journal, spaceId, '0', ['A', 'B']);
    // The unguarded reader already moved its cursor past A's id: it never sees A.
    expect(names(await read(weaker('unguarded'), spaceId, unguarded.at(-1)!.eventId))).toEqual([]);
  });

  it('orders causally: a transaction that took its xid early and saw a younger one commit sorts after it', async () => {
    expect(await causalOrder(store)).toEqual(['T1', 'T0']);
  });

  it('the causal check sees the order a position taken from the writer\'s xid gives (the planted bug)', async () => {
    const planted = await createTestDatabase();
    const plantedDriver = new PgDriver(planted.url, { max: 4 });
    try {
      await migrate(plantedDriver);
      await plantedDriver.exec('ALTER TABLE events ALTER COLUMN tx SET DEFAULT pg_current_xact_id()');
      expect(await causalOrder(new SqlStore(plantedDriver))).toEqual(['T0', 'T1']);
    } finally {
      await plantedDriver.close();
      await planted.drop();
    }
  });

  /**
   * T0 takes its xid first (it locks and writes a budget row); T1, younger, writes, appends and
   * commits; then T0 reads what T1 committed and appends. T0's event is about something that
   * happened after T1's, so it must come after it in the journal, though T0's xid is older.
   */
  async function causalOrder(on: SqlStore): Promise<string[]> {
    const spaceId = randomUUID();
    const early = await writerBudget(spaceId, on);
    const late = await writerBudget(spaceId, on);
    const t0HasXid = deferred();
    const t1Committed = deferred();
    const t0 = on.transaction(async (tx) => {
      await touch(tx, early);
      t0HasXid.resolve();
      await t1Committed.promise;
      expect((await tx.budgets.get(spaceId, late.id))!.updatedAt).toBe(late.updatedAt + 1);
      await tx.events.append(spaceId, T0, [{ type: 'test.appended', aggregateType: 'test', aggregateId: 'T0', scopeId: null, data: {} }]);
    });
    await t0HasXid.promise;
    await on.transaction(async (tx) => {
      await touch(tx, late);
      await tx.events.append(spaceId, T0, [{ type: 'test.appended', aggregateType: 'test', aggregateId: 'T1', scopeId: null, data: {} }]);
    });
    t1Committed.resolve();
    await t0;
    // Both, once the horizon has passed them (other test files' transactions can hold it back).
    const reader: Reader = (s, after, limit) => on.read((tx) => tx.events.listAfter(s, after, limit));
    await expect.poll(async () => (await read(reader, spaceId, '0')).length, { timeout: 10_000, interval: 10 }).toBe(2);
    return names(await read(reader, spaceId, '0'));
  }

  /**
   * J locks a task row; A then commits an update of that row, held to its COMMIT with an append,
   * and waits out J's lock there; J appends and commits; A's update lands on J's committed row.
   * So A's event is about something after J's and must sort after it. When A's held writes and
   * its appends left as one statement, the append's position was drawn on that statement's
   * snapshot, before the wait, and A sorted first: `npm run sim -- --store pg` caught a group
   * join journaled as PENDING after the task.running of a claim that had waited for the join.
   */
  it('orders causally: an append sorts after the commit that the same COMMIT round trip waited for', async () => {
    const spaceId = randomUUID();
    const task: Task = {
      id: randomUUID(), spaceId, taskKey: randomUUID(), fingerprint: 'f', mailboxId: randomUUID(), scopeId: spaceId, state: 'PENDING',
      input: {}, requirements: { pools: [], quotas: [], budgets: [] }, workLimit: null, deadline: null, attempts: 0, outcome: null,
      failureReason: null, messageId: null, groupId: null, tombstoned: false, createdAt: T0, updatedAt: T0,
    };
    await store.transaction((tx) => tx.tasks.insert(task));
    const jLocked = deferred();
    const aWaits = deferred();
    const j = store.transaction(async (tx) => {
      await tx.tasks.get(spaceId, task.id, { forUpdate: true });
      jLocked.resolve();
      await aWaits.promise;
      await tx.events.append(spaceId, T0, [{ type: 'test.appended', aggregateType: 'test', aggregateId: 'J', scopeId: null, data: {} }]);
    });
    await jLocked.promise;
    const a = store.transaction(async (tx) => {
      await tx.tasks.update({ ...task, updatedAt: T0 + 1 });
      await tx.events.append(spaceId, T0, [{ type: 'test.appended', aggregateType: 'test', aggregateId: 'A', scopeId: null, data: {} }]);
    });
    const waiting = async (): Promise<number> => (await driver.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0]!.n;
    await expect.poll(waiting, { timeout: 10_000, interval: 10 }).toBe(1);
    // Another writer takes an xid meanwhile, as on any busy server: J's append then draws a tx
    // above the snapshot of A's waiting statement.
    await store.transaction((tx) => tx.idempotency.put({ spaceId: randomUUID(), key: 'k', fingerprint: 'f', statusCode: 200, body: null, createdAt: T0 }));
    aWaits.resolve();
    await Promise.all([j, a]);
    await expect.poll(async () => (await read(journal, spaceId, '0')).length, { timeout: 10_000, interval: 10 }).toBe(2);
    expect(names(await read(journal, spaceId, '0'))).toEqual(['J', 'A']);
  });

  it('delays visibility while any older transaction holding an xid is open, not for read-only ones', async () => {
    const spaceId = randomUUID();
    const writer = openTransaction(async (tx) => {
      await tx.idempotency.put({ spaceId: randomUUID(), key: 'k', fingerprint: 'f', statusCode: 200, body: null, createdAt: T0 });
    });
    await writer.ready;
    const reader = openTransaction(async (tx) => {
      await tx.budgets.list(spaceId, null, 1); // reads only: no xid
    });
    await reader.ready;
    await store.transaction((tx) => append(tx, spaceId, 'E'));
    expect(names(await read(journal, spaceId, '0'))).toEqual([]);
    expect(await eventsBehindHorizon(store, spaceId)).toBe(1);
    writer.release();
    await writer.done;
    // Other test files share this server; their short transactions may delay it a moment more.
    await expect.poll(async () => names(await read(journal, spaceId, '0')), { timeout: 10_000, interval: 20 }).toEqual(['E']);
    expect(await eventsBehindHorizon(store, spaceId)).toBe(0);
    reader.release();
    await reader.done;
  });

  it('reads a page with one range scan of the primary key, in index order (no sort)', async () => {
    const spaceId = randomUUID();
    await store.transaction((tx) => append(tx, spaceId, 'P'));
    const [first] = await eventually(journal, spaceId, '0', ['P']);
    const { tx, eventId } = decodePosition(first!.eventId);
    const plan = await driver.transaction(async (q) => {
      // The table is tiny here; make the planner show the plan it would use on a large one.
      await q.query('SET LOCAL enable_seqscan = off');
      await q.query('SET LOCAL enable_bitmapscan = off');
      return (await q.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${listAfterSql}`, [spaceId, tx, eventId, 100])).map((r) => r['QUERY PLAN']).join('\n');
    });
    expect(plan).toContain('Index Scan using events_pkey');
    expect(plan).not.toMatch(/Sort/);
  });

  interface StressResult {
    committed: string[];
    seen: string[];
    final: string[];
  }

  /**
   * Writers append in transactions that write a budget row first (as the service does), sleep
   * at random, sometimes roll back; meanwhile `reader` is followed from cursor to cursor.
   */
  async function stress(reader: Reader, seed: number, writers = 8, transactionsEach = 40): Promise<StressResult> {
    const spaceId = randomUUID();
    const budgets = await Promise.all(Array.from({ length: writers }, () => writerBudget(spaceId)));
    const committed: string[] = [];

    // Each writer draws from its own generator, so its choices depend on the seed alone.
    const write = async (w: number): Promise<void> => {
      const random = seeded(seed * 31 + w);
      for (let i = 0; i < transactionsEach; i++) {
        const batch = Array.from({ length: 1 + Math.floor(random() * 3) }, (_, k) => `w${w}-t${i}-e${k}`);
        const rollback = random() < 0.1;
        const [d1, d2, d3] = [random() * 4, random() * 4, random() * 4];
        try {
          await rawTransaction(async (tx) => {
            await sleep(d1);
            await touch(tx, budgets[w]!);
            await sleep(d2);
            for (const name of batch) await append(tx, spaceId, name);
            await sleep(d3);
            if (rollback) throw new RolledBack();
          });
          committed.push(...batch);
        } catch (error) {
          if (!(error instanceof RolledBack)) throw error;
        }
      }
    };

    let drain = false;
    const follow = async (): Promise<string[]> => {
      const random = seeded(seed);
      const seen: string[] = [];
      let cursor = '0';
      for (;;) {
        const draining = drain;
        const page = await read(reader, spaceId, cursor, 50);
        seen.push(...names(page));
        cursor = page.at(-1)?.eventId ?? cursor;
        if (draining && page.length === 0) return seen;
        await sleep(random() * 2);
      }
    };

    const following = follow();
    await Promise.all(Array.from({ length: writers }, (_, w) => write(w)));
    // Once the horizon has passed every writer (other test files' transactions on this server
    // can hold it back a moment), all is visible to any reader: what it has not seen after one
    // more pass, it skipped for good.
    await expect.poll(async () => (await read(journal, spaceId, '0', 100_000)).length, { timeout: 10_000, interval: 20 }).toBe(committed.length);
    drain = true;
    const seen = await following;
    const final = names(await read(journal, spaceId, '0', 100_000));
    return { committed, seen, final };
  }

  class RolledBack extends Error {}

  const seedOf = (): number => Number(process.env.BATON_JOURNAL_SEED ?? Math.floor(Math.random() * 2 ** 31));

  it('a reader following the cursor sees every committed event exactly once, in journal order', async () => {
    const seed = seedOf();
    const { committed, seen, final } = await stress(journal, seed);
    const context = `seed ${seed} (replay the choices with BATON_JOURNAL_SEED=${seed})`;
    expect(new Set(seen).size, context).toBe(seen.length);
    expect([...seen].sort(), context).toEqual([...committed].sort());
    expect(seen, context).toEqual(final);
    expect(committed.length).toBeGreaterThan(300);
  });

  it('the same stress catches the skips of a reader without the horizon guard', async () => {
    const seed = seedOf();
    // Each round is likely to skip; a few rounds make a miss of the demonstration vanishingly rare.
    let skipped = 0;
    for (let round = 0; round < 5 && skipped === 0; round++) {
      const { committed, seen } = await stress(weaker('unguarded'), seed + round, 8, 25);
      skipped = committed.filter((name) => !seen.includes(name)).length;
    }
    expect(skipped, `seed ${seed}`).toBeGreaterThan(0);
  });
});
