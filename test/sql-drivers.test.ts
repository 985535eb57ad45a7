import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Org } from '@baton/core';
import { openStore } from '@baton-coordination/server/store/open-store';
import type { SqlDriver, SqlQueryable } from '@baton-coordination/server/store/sql/driver';
import { loadMigrations, migrate } from '@baton-coordination/server/store/sql/migrate';
import { PgDriver } from '@baton-coordination/server/store/sql/pg-driver';
import { PgliteDriver } from '@baton-coordination/server/store/sql/pglite-driver';
import { SqlStore } from '@baton-coordination/server/store/sql/sql-store';
import { createTestDatabase, postgresUrl, storeTargets, type OpenedStore, type TestDatabase } from './support/databases';

/** The drivers and migrations under the SqlStore: what the conformance suite takes for granted. */

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const pgliteTarget = storeTargets().find((t) => t.name === 'pglite')!;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function migratedPglite(): Promise<SqlDriver> {
  const opened: OpenedStore = await pgliteTarget.open();
  cleanups.push(opened.close);
  return (opened.store as SqlStore).driver;
}

describe('pglite driver', () => {
  it('queues concurrent transactions and statements instead of interleaving them', async () => {
    const driver = await migratedPglite();
    await driver.exec('CREATE TABLE t (n int)');
    const log: string[] = [];
    const first = driver.transaction(async (q) => {
      log.push('first begins');
      await q.query('INSERT INTO t VALUES (1)');
      await sleep(50);
      const [row] = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM t');
      log.push(`first sees ${row!.n}`);
    });
    const second = driver.transaction(async (q) => {
      log.push('second begins');
      await q.query('INSERT INTO t VALUES (2)');
    });
    const outside = driver.query<{ n: number }>('SELECT count(*)::int AS n FROM t').then(([row]) => log.push(`outside sees ${row!.n}`));
    await Promise.all([first, second, outside]);
    // The second transaction and the lone statement waited for the first to commit, in turn.
    expect(log).toEqual(['first begins', 'first sees 1', 'second begins', 'outside sees 2']);
  });

  it('rolls back a transaction whose work throws, and keeps working', async () => {
    const driver = await migratedPglite();
    await driver.exec('CREATE TABLE t (n int)');
    await expect(
      driver.transaction(async (q) => {
        await q.query('INSERT INTO t VALUES (1)');
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    await driver.transaction((q) => q.query('INSERT INTO t VALUES (2)'));
    expect(await driver.query('SELECT n FROM t')).toEqual([{ n: 2 }]);
  });

  it('persists under a data directory across restarts, migrating once', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'baton-pglite-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const org: Org = { id: 'o1', name: 'acme', plan: 'TEAM', limits: null, createdAt: 1, updatedAt: 2 };
    const first = await openStore({ kind: 'pglite', dataDir });
    await first.transaction((tx) => tx.orgs.insert(org));
    await first.close();

    const again = await openStore({ kind: 'pglite', dataDir });
    try {
      expect(await again.read((tx) => tx.orgs.get('o1'))).toEqual(org);
      expect(await migrate((again as SqlStore).driver)).toEqual([]);
    } finally {
      await again.close();
    }
  });
});

describe('migrations', () => {
  it('refuse to run when an applied migration has changed', async () => {
    const driver = await migratedPglite();
    const edited = (await loadMigrations()).map((m, i) => (i === 0 ? { ...m, sql: `${m.sql}\n-- edited`, checksum: 'edited' } : m));
    await expect(migrate(driver, edited)).rejects.toThrow(/001_init\.sql changed after it was applied/);
  });

  it('roll back a run whose migration fails, leaving nothing half applied', async () => {
    const driver = await migratedPglite();
    const broken = [...(await loadMigrations()), { name: '002_broken.sql', sql: 'CREATE TABLE half (n int); SELECT no_such_function();', checksum: 'x' }];
    await expect(migrate(driver, broken)).rejects.toThrow();
    expect(await driver.query(`SELECT to_regclass('half') AS t`)).toEqual([{ t: null }]);
    expect(await driver.query('SELECT name FROM baton_migrations ORDER BY name')).toEqual((await loadMigrations()).map((m) => ({ name: m.name })));
  });
});

describe.runIf(postgresUrl())('pg driver and migrations on PostgreSQL', () => {
  async function database(): Promise<TestDatabase> {
    const db = await createTestDatabase();
    cleanups.push(db.drop);
    return db;
  }

  function pgDriver(url: string, errors: Error[] = []): PgDriver {
    const driver = new PgDriver(url, { onConnectionError: (e) => errors.push(e) });
    // Registered after drop's cleanup, so it runs first: close, then drop.
    cleanups.push(() => driver.close());
    return driver;
  }

  it('applies each migration once when several servers start at the same moment', async () => {
    const db = await database();
    const drivers = Array.from({ length: 4 }, () => pgDriver(db.url));
    const applied = await Promise.all(drivers.map((d) => migrate(d)));
    const names = (await loadMigrations()).map((m) => m.name);
    expect(applied.flat()).toEqual(names);
    expect(await drivers[0]!.query('SELECT name FROM baton_migrations ORDER BY name')).toEqual(names.map((name) => ({ name })));
  });

  it('normalises what pg returns: int8 as bigint, timestamptz as epoch ms', async () => {
    const db = await database();
    const store = new SqlStore(pgDriver(db.url));
    await migrate(store.driver);
    const [raw] = await store.driver.query<{ big: unknown; at: unknown }>(`SELECT 999999999999999999::bigint AS big, '2024-01-01T00:00:00.123Z'::timestamptz AS at`);
    expect(raw).toEqual({ big: '999999999999999999', at: new Date(Date.UTC(2024, 0, 1, 0, 0, 0, 123)) });
  });

  it('survives the server dropping an idle pooled connection', async () => {
    const db = await database();
    const errors: Error[] = [];
    const driver = pgDriver(db.url, errors);
    const [{ pid }] = (await driver.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')) as [{ pid: number }];
    await terminate(db.url, pid);
    await expect.poll(() => errors.length, { timeout: 5000 }).toBeGreaterThan(0);
    expect(await driver.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
  });

  it('survives losing the connection in the middle of a transaction, and discards it', async () => {
    const db = await database();
    const errors: Error[] = [];
    const driver = pgDriver(db.url, errors);
    const attempt = driver.transaction(async (q) => {
      const [{ pid }] = (await q.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')) as [{ pid: number }];
      await terminate(db.url, pid);
      await sleep(100); // between statements: the error arrives with nobody waiting for a reply
      await q.query('SELECT 1');
    });
    await expect(attempt).rejects.toThrow();
    // Reported to the handler instead of crashing the process as an unhandled 'error' event.
    expect(errors.map((e) => e.message).join()).toMatch(/terminat/);
    expect(await driver.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
  });

  // A transaction's statements of one tick go out as one pipeline segment with one Sync
  // (pg-statement-batch.ts): these pin what a Sync per statement used to give.
  it('sends the statements of a tick in one round trip and answers each with its own rows', async () => {
    const db = await database();
    const driver = pgDriver(db.url);
    await driver.exec('CREATE TABLE t (id int PRIMARY KEY, v text)');
    const before = driver.meter.snapshot();
    const answers = await driver.transaction(async (q) => {
      void q.write('INSERT INTO t VALUES ($1, $2)', [1, 'a']);
      return Promise.all([q.query('SELECT v FROM t WHERE id = $1', [1]), q.query('SELECT count(*)::int AS n FROM t WHERE id > $1', [5]), q.query('SELECT 1 AS one WHERE false')]);
    });
    expect(answers).toEqual([[{ v: 'a' }], [{ n: 0 }], []]);
    const after = driver.meter.snapshot();
    // BEGIN, the write and the three reads in one; the COMMIT, sent once the reads are in, in another.
    expect(after.roundTrips - before.roundTrips).toBe(2);
    // Again, now that each statement's row shape is known and no Describe goes out: same rows.
    expect(await driver.transaction((q) => q.query('SELECT v FROM t WHERE id = $1', [1]))).toEqual([{ v: 'a' }]);
  });

  it('fails a transaction at its first failed statement, answers the rest of the segment as not run, and commits nothing', async () => {
    const db = await database();
    const driver = pgDriver(db.url);
    await driver.exec('CREATE TABLE t (id int PRIMARY KEY, v text)');
    let later: unknown;
    const attempt = driver.transaction(async (q) => {
      void q.write('INSERT INTO t VALUES ($1, $2)', [1, 'a']);
      void q.write('INSERT INTO t VALUES ($1, $2)', [1, 'duplicate']);
      const read = q.query('SELECT v FROM t WHERE id = $1', [1]).catch((error: unknown) => (later = error));
      await read;
    });
    await expect(attempt).rejects.toMatchObject({ code: '23505' });
    // The read after the failure reports the failure that aborted the transaction, not 25P02.
    expect(later).toMatchObject({ code: '23505' });
    expect(await driver.query('SELECT count(*)::int AS n FROM t')).toEqual([{ n: 0 }]);
    // The connection, and the statements it prepared before the failure, still work.
    await driver.transaction(async (q) => q.write('INSERT INTO t VALUES ($1, $2)', [2, 'b']));
    expect(await driver.transaction((q) => q.query('SELECT v FROM t WHERE id = $1', [2]))).toEqual([{ v: 'b' }]);
  });

  it('prepares again a statement whose Parse failed, once it can succeed', async () => {
    const db = await database();
    const driver = new PgDriver(db.url, { max: 1 });
    cleanups.push(() => driver.close());
    const read = (q: SqlQueryable) => q.query('SELECT v FROM late WHERE id = $1', [1]);
    await expect(driver.transaction(read)).rejects.toMatchObject({ code: '42P01' });
    await driver.exec(`CREATE TABLE late (id int PRIMARY KEY, v text); INSERT INTO late VALUES (1, 'here')`);
    expect(await driver.transaction(read)).toEqual([{ v: 'here' }]);
  });
});

async function terminate(url: string, pid: number): Promise<void> {
  const other = new PgDriver(url);
  try {
    await other.query('SELECT pg_terminate_backend($1)', [pid]);
  } finally {
    await other.close();
  }
}
