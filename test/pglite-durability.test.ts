import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDurablePglite } from '@baton-coordination/server/store/sql/pglite-durable';

/** The embedded store's durability (docs/embedded-store.md): each commit reaches fsync(2). */
const dir = mkdtempSync(join(tmpdir(), 'baton-durable-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('durable PGlite', () => {
  it('runs with fsync on and fsyncs the WAL on every commit', async () => {
    const { db, hostFsyncs } = await openDurablePglite(join(dir, 'data'));
    try {
      const settings = (await db.query<{ name: string; setting: string }>("SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'wal_sync_method', 'shared_buffers') ORDER BY name")).rows;
      expect(settings).toEqual([
        { name: 'fsync', setting: 'on' },
        { name: 'shared_buffers', setting: '4096' }, // 8 kB pages: 32 MB
        { name: 'synchronous_commit', setting: 'on' },
        { name: 'wal_sync_method', setting: 'fsync' },
      ]);
      await db.exec('CREATE TABLE t (n int)');
      const before = hostFsyncs();
      for (let n = 0; n < 20; n++) await db.transaction(async (tx) => void (await tx.query('INSERT INTO t VALUES ($1)', [n])));
      expect(hostFsyncs() - before).toBeGreaterThanOrEqual(20);
    } finally {
      await db.close();
    }
  }, 120_000); // from source, without the build's template: PGlite runs initdb

  it('keeps what was committed across a reopen', async () => {
    const { db } = await openDurablePglite(join(dir, 'data'));
    try {
      expect((await db.query<{ count: number }>('SELECT count(*)::int AS count FROM t')).rows[0]?.count).toBe(20);
    } finally {
      await db.close();
    }
  });

  // Why an existing directory is not fsynced by Baton at open: PostgreSQL's crash recovery does it.
  it('after a crash, the next open fsyncs the whole directory through PostgreSQL recovery', async () => {
    const { db } = await openDurablePglite(join(dir, 'data'));
    try {
      await db.exec('INSERT INTO t VALUES (100)');
      // The directory of a running server, as a crash leaves it: not shut down.
      cpSync(join(dir, 'data'), join(dir, 'crashed'), { recursive: true });
    } finally {
      await db.close();
    }
    const files = readdirSync(join(dir, 'crashed'), { recursive: true }).length;
    const reopened = await openDurablePglite(join(dir, 'crashed'));
    try {
      expect(reopened.hostFsyncs()).toBeGreaterThanOrEqual(files);
      expect((await reopened.db.query<{ count: number }>('SELECT count(*)::int AS count FROM t')).rows[0]?.count).toBe(21);
    } finally {
      await reopened.db.close();
    }
    const clean = await openDurablePglite(join(dir, 'data'));
    try {
      expect(clean.hostFsyncs()).toBeLessThan(20); // shut down cleanly: nothing to recover
    } finally {
      await clean.db.close();
    }
  }, 120_000);
});
