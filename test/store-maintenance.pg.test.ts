import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '@baton/core';
import { openStore } from '../server/src/store/open-store';
import type { SqlStore } from '../server/src/store/sql/sql-store';
import { createTestDatabase, insertTenant, postgresUrl, type TestDatabase } from './support/databases';

/**
 * Store.maintain on PostgreSQL (sql-store.ts): the queue tables are analyzed once they changed by
 * more than 1,000 rows plus 5 %, so the candidate claim is planned from statistics that say how
 * few rows are READY, not from those taken while the queue filled. Not before: an ANALYZE is work.
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

  const changedSinceAnalyze = async (): Promise<number> => {
    const [row] = await (store as SqlStore).driver.query<{ n: unknown }>(`SELECT n_mod_since_analyze AS n FROM pg_stat_user_tables WHERE relname = 'messages'`);
    return Number(row?.n ?? 0);
  };

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

  it('leaves a table with few changes alone, and analyzes messages once more than 1,000 rows changed', async () => {
    await insertMessages(200);
    // PostgreSQL's counters are flushed about once a second after a transaction.
    await expect.poll(changedSinceAnalyze, { timeout: 10_000, interval: 100 }).toBeGreaterThanOrEqual(200);
    await store.maintain();
    expect(await changedSinceAnalyze()).toBeGreaterThanOrEqual(200);

    await insertMessages(1_200);
    await expect.poll(changedSinceAnalyze, { timeout: 10_000, interval: 100 }).toBeGreaterThan(1_050);
    await store.maintain();
    expect(await changedSinceAnalyze()).toBeLessThan(1_000);
  });
});
