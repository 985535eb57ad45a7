import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import type { Store } from '@baton/core';
import type { SqlStore } from '@baton-coordination/server/store/sql/sql-store';
import { openStore } from '@baton-coordination/server/store/open-store';
import { createTestDatabase, postgresUrl, type TestDatabase } from './support/databases';
import { idem, startTestServer, type TestServer } from './support/server';

/**
 * A submit's task insert rides with its COMMIT (issue 12: submit in two round trips), so it
 * cannot answer whether it took the taskKey. Here a second transaction holds the key
 * uncommitted while a submit of that key runs: the submit's insert waits for it, loses the race
 * when it commits, and the submit runs again and answers as a join of the winner.
 */
const scopeId = '11111111-1111-4111-8111-111111111111';

describe.runIf(postgresUrl())('a submit that loses its taskKey to a concurrent transaction on PostgreSQL', () => {
  let db: TestDatabase;
  let store: Store;
  let server: TestServer;
  let holder: pg.Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = await openStore({ kind: 'postgres', url: db.url });
    server = await startTestServer(store);
    holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
  });
  afterAll(async () => {
    await holder?.end();
    await server?.close();
    await store?.close();
    await db?.drop();
  });

  it('runs again and answers 200 with the winner, whose delivery is the only one sent', async () => {
    const box = (await server.api('POST', '/mailboxes', { body: { name: 'race-box' }, idem: idem() })).body.id;
    const body = (taskKey: string) => ({ scopeId, mailboxId: box, taskKey, input: { same: true } });
    // The winner: a copy of a probe task under the raced key, inserted and left uncommitted.
    const probe = await server.api('POST', '/tasks', { body: body('probe'), idem: idem() });
    expect(probe.statusCode).toBe(201);
    const winnerId = '33333333-3333-4333-8333-333333333333';
    // Every stored column but the generated ones (which PostgreSQL computes and refuses as input).
    const { rows } = await holder.query<{ columns: string }>(
      `SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position) AS columns FROM information_schema.columns
       WHERE table_schema = current_schema() AND table_name = 'tasks' AND is_generated = 'NEVER'`,
    );
    const columns = rows[0]!.columns;
    await holder.query('BEGIN');
    await holder.query(
      `INSERT INTO tasks (${columns}) SELECT ${columns} FROM jsonb_populate_record(NULL::tasks,
         (SELECT to_jsonb(t) || jsonb_build_object('id', $2::text, 'task_key', 'raced', 'message_id', NULL) FROM tasks t WHERE t.id = $1))`,
      [probe.body.taskId, winnerId],
    );

    const racedBefore = (store as SqlStore).racedTransactions;
    const submitting = server.api('POST', '/tasks', { body: body('raced'), idem: idem() });
    await untilWaitingOnLock(holder);
    await holder.query('COMMIT');
    const submitted = await submitting;

    expect(submitted.statusCode).toBe(200);
    expect(submitted.body).toEqual({ taskId: winnerId, state: 'PENDING', created: false });
    expect((store as SqlStore).racedTransactions).toBe(racedBefore + 1);
    // The lost attempt's delivery and events were rolled back with it.
    const ready = (await server.api('GET', `/mailboxes/${box}/messages?state=READY`)).body.items as { payload: { taskId: string } }[];
    expect(ready.map((m) => m.payload.taskId)).toEqual([probe.body.taskId]);
  });
});

/** Until some other backend of this database waits on a lock (the submit's insert behind the held key). */
async function untilWaitingOnLock(client: pg.Client): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const { rows } = await client.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    if (rows[0].n > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the submit never waited on the held taskKey');
}
