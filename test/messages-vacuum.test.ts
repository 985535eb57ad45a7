import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { migrate } from '@baton-coordination/server/store/sql/migrate';
import { PgliteDriver } from '@baton-coordination/server/store/sql/pglite-driver';
import { SqlStore } from '@baton-coordination/server/store/sql/sql-store';
import { createTestDatabase, insertTenant, postgresUrl } from './support/databases';
import { openStore } from '@baton-coordination/server/store/open-store';

/**
 * The claimed prefix of the READY indexes (migration 031, docs/growth.md): a claimed READY row's
 * index entries stay until VACUUM, and every claim reads their pages from the head of the line.
 * PostgreSQL's autovacuum is told to come by a fixed count of dead rows and to always clean the
 * indexes; PGlite, which has no autovacuum, is vacuumed by Store.maintain.
 */

const T0 = Date.UTC(2026, 0, 1);

/**
 * The buffers a scan from the head of the READY line reads to find its first row. Read twice: the
 * first scan past a claimed row's entry visits the heap and marks the entry dead, and only the
 * scans after it read the prefix as every claim then does, index pages alone.
 */
async function headBuffers(driver: PgliteDriver, spaceId: string, mailboxId: string): Promise<number> {
  await scanBuffers(driver, spaceId, mailboxId);
  return scanBuffers(driver, spaceId, mailboxId);
}

async function scanBuffers(driver: PgliteDriver, spaceId: string, mailboxId: string): Promise<number> {
  const [row] = await driver.query<{ 'QUERY PLAN': unknown }>(
    `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT id FROM messages WHERE space_id = $1 AND mailbox_id = $2 AND scope_id = $1 AND state = 'READY' ORDER BY seq LIMIT 1`,
    [spaceId, mailboxId],
  );
  const plan = (row!['QUERY PLAN'] as Array<{ Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }>)[0]!.Plan;
  return plan['Shared Hit Blocks'] + plan['Shared Read Blocks'];
}

describe('messages vacuum', () => {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  it('on PGlite, maintain vacuums messages after its count of transactions, which clears the claimed prefix; not before', async () => {
    const driver = await PgliteDriver.open();
    closers.push(() => driver.close());
    await migrate(driver);
    const store = new SqlStore(driver, 40);
    const spaceId = randomUUID();
    const mailboxId = randomUUID();
    await store.transaction(async (tx) => {
      await insertTenant(tx, randomUUID(), spaceId, T0);
      await tx.mailboxes.insert({ id: mailboxId, spaceId, name: 'box', mode: 'WORK', recipientId: null, backlogLimit: 100_000, createdAt: T0, updatedAt: T0 });
    });
    await driver.query(
      `INSERT INTO messages (space_id, id, mailbox_id, scope_id, payload, state, attempt, created_at, updated_at)
       SELECT $1, md5(g::text), $2, $1, '{}', 'READY', 0, now(), now() FROM generate_series(1, 3000) g`,
      [spaceId, mailboxId],
    );
    await driver.exec('VACUUM messages');
    const fresh = await headBuffers(driver, spaceId, mailboxId);

    // 30 transactions claim 2,400 rows: the head of the line now sits behind their index entries.
    for (let i = 0; i < 30; i++) {
      const hashes = Array.from({ length: 80 }, (_, k) => `token-${i}-${k}`);
      const claimed = await store.transaction((tx) =>
        tx.messages.claimMany({ spaceId, mailboxId, scopeIds: [spaceId], tokenHashes: hashes, holder: 'w', holderSession: 's', leaseExpiresAt: T0 + 60_000, nowMs: T0 }),
      );
      expect(claimed).toHaveLength(80);
    }
    const behindPrefix = await headBuffers(driver, spaceId, mailboxId);
    expect(behindPrefix).toBeGreaterThan(fresh + 5);

    await store.maintain(); // 31 transactions: under the 40 this store was given
    expect(await headBuffers(driver, spaceId, mailboxId)).toBe(behindPrefix);

    for (let i = 0; i < 10; i++) await store.transaction((tx) => tx.messages.get(spaceId, randomUUID()));
    await store.maintain(); // 41 transactions
    expect(await headBuffers(driver, spaceId, mailboxId)).toBeLessThanOrEqual(fresh + 1);
  });

  it.runIf(postgresUrl())('on PostgreSQL, messages is autovacuumed by a fixed count of dead rows with its index pass', async () => {
    const db = await createTestDatabase();
    const store = await openStore({ kind: 'postgres', url: db.url });
    closers.push(async () => {
      await store.close();
      await db.drop();
    });
    const [row] = await (store as SqlStore).driver.query<{ reloptions: string[] }>(`SELECT reloptions FROM pg_class WHERE oid = 'messages'::regclass`);
    expect(row!.reloptions).toEqual(expect.arrayContaining(['autovacuum_vacuum_scale_factor=0', 'autovacuum_vacuum_threshold=5000', 'vacuum_index_cleanup=on']));
  });
});
