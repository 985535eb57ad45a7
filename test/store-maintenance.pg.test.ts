import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '@baton/core';
import { openStore } from '@baton-coordination/server/store/open-store';
import type { SqlStore } from '@baton-coordination/server/store/sql/sql-store';
import { createTestDatabase, insertTenant, postgresUrl, type TestDatabase } from './support/databases';

/**
 * Store.maintain on PostgreSQL (sql-store.ts): a queue table is analyzed once it has more than
 * doubled (plus 500 rows) since its last statistics, so prepared statements drop the plans they
 * made while it was nearly empty. Not before: an ANALYZE is work.
 */

const T0 = Date.UTC(2026, 0, 1);

describe.runIf(postgresUrl())('store maintenance on PostgreSQL', () => {
  let db: TestDatabase;
  let store: Store;
  const spaceId = randomUUID();

  beforeAll(async () => {
    db = await createTestDatabase();
    store = await openStore({ kind: 'postgres', url: db.url });
    await store.transaction((tx) => insertTenant(tx, randomUUID(), spaceId, T0));
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  /** Rows at the last statistics (-1: never analyzed), and rows now, as PostgreSQL counts them. */
  const sizes = async (): Promise<{ analyzed: number; live: number }> => {
    const [row] = await (store as SqlStore).driver.query<{ analyzed: unknown; live: unknown }>(
      `SELECT c.reltuples AS analyzed, s.n_live_tup AS live FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.relname = 'messages'`,
    );
    return { analyzed: Number(row?.analyzed), live: Number(row?.live) };
  };
  // PostgreSQL's counters are flushed about once a second after a transaction.
  const counted = (rows: number) => expect.poll(async () => (await sizes()).live, { timeout: 10_000, interval: 100 }).toBe(rows);

  const insertMessages = async (count: number): Promise<void> => {
    const mailboxId = randomUUID();
    await store.transaction(async (tx) => {
      await tx.mailboxes.insert({ id: mailboxId, spaceId, name: `box-${mailboxId}`, mode: 'WORK', recipientId: null, backlogLimit: 100_000, createdAt: T0, updatedAt: T0 });
      for (let i = 0; i < count; i++) {
        await tx.messages.insert({
          id: randomUUID(), spaceId, mailboxId, scopeId: spaceId, payload: { i }, workKey: null, deadline: null, taskId: null, state: 'READY', attempt: 0,
          tokenHash: null, holder: null, holderSession: null, leaseExpiresAt: null, result: null, requirements: null, claimed: null, createdAt: T0, updatedAt: T0,
        });
      }
    });
  };

  it('analyzes messages once it more than doubled since its last statistics, and not before', async () => {
    await insertMessages(400);
    await counted(400);
    await store.maintain();
    expect((await sizes()).analyzed).toBe(-1);

    await insertMessages(800);
    await counted(1_200);
    await store.maintain();
    expect((await sizes()).analyzed).toBe(1_200);

    // 900 more: under twice 1,200, and under autovacuum's own threshold (migration 011).
    await insertMessages(900);
    await counted(2_100);
    await store.maintain();
    expect((await sizes()).analyzed).toBe(1_200);
  });
});
