import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '@baton-coordination/server/store/open-store';
import { createTestDatabase, postgresUrl, type TestDatabase } from './support/databases';
import { idem, startMs, startTestServer } from './support/server';

/**
 * A task's two moves in a job (PENDING -> RUNNING at admit, RUNNING -> SUCCEEDED at complete)
 * are HOT updates on PostgreSQL: no index of `tasks` gets a new entry (migration 014; measured in
 * an earlier pass of docs/benchmarks.md, "Fewer index writes", in git history). An index whose key or predicate reads a column a
 * move changes (as tasks_deadline_due once read `state`) makes every one of them a full update;
 * the last case plants such an index back to show the check sees it.
 *
 * The counts come from pg_stat_user_tables, which a backend reports when it exits: each case runs
 * its jobs on a server and store of its own and closes them before reading.
 */

const scopeId = '22222222-2222-4222-8222-222222222222';
const jobs = 20;

describe.runIf(postgresUrl())('task moves are HOT updates on PostgreSQL', () => {
  const databases: TestDatabase[] = [];
  afterAll(async () => {
    for (const db of databases) await db.drop();
  });

  async function taskUpdateCounts(reader: pg.Client): Promise<{ updates: number; hot: number }> {
    // A fresh snapshot each time: the statistics views cache what they read within a transaction.
    await reader.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await reader.query<{ updates: string; hot: string }>(
      `SELECT n_tup_upd AS updates, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relname = 'tasks'`,
    );
    return { updates: Number(rows[0]?.updates ?? 0), hot: Number(rows[0]?.hot ?? 0) };
  }

  /**
   * On a fresh database (`prepare` runs on it first), runs `jobs` tasks (every other one with a
   * deadline) through submit, admit and complete: their task updates, and how many were HOT.
   */
  async function runJobs(prepare: string | null): Promise<{ updates: number; hot: number }> {
    const db = await createTestDatabase();
    databases.push(db);
    const store = await openStore({ kind: 'postgres', url: db.url });
    const reader = new pg.Client({ connectionString: db.url });
    await reader.connect();
    try {
      if (prepare) await reader.query(prepare);
      const server = await startTestServer(store);
      try {
        const box = await server.api('POST', '/mailboxes', { body: { name: 'hot-box', backlogLimit: 10_000 }, idem: idem() });
        expect(box.statusCode).toBe(201);
        const mailboxId = box.body.id as string;
        for (let i = 0; i < jobs; i++) {
          const deadline = i % 2 === 0 ? { deadline: new Date(startMs + 3_600_000).toISOString() } : {};
          const submit = await server.api('POST', '/tasks', { body: { scopeId, mailboxId, taskKey: `t-${i}`, input: { i }, ...deadline }, idem: idem() });
          expect(submit.statusCode, JSON.stringify(submit.body)).toBe(201);
          const admit = await server.api('POST', '/tasks/admit', { body: { scopeId, mailboxId, holder: 'w', holderSession: 's', leaseSeconds: 60 }, idem: idem() });
          expect(admit.statusCode, JSON.stringify(admit.body)).toBe(200);
          const complete = await server.api('POST', `/messages/${admit.body.messageId}/complete`, { body: { token: admit.body.token, result: { ok: i } }, idem: idem() });
          expect(complete.statusCode, JSON.stringify(complete.body)).toBe(200);
        }
      } finally {
        await server.close();
        await store.close();
      }
      // The pool's backends report their counts as they exit, just after their connections close.
      let counts = await taskUpdateCounts(reader);
      for (let waitedMs = 0; counts.updates < 2 * jobs && waitedMs < 5_000; waitedMs += 50) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        counts = await taskUpdateCounts(reader);
      }
      return counts;
    } finally {
      await reader.end();
    }
  }

  it('admit and complete update the task in place, with or without a deadline', async () => {
    const { updates, hot } = await runJobs(null);
    expect(updates).toBeGreaterThanOrEqual(2 * jobs);
    // A task with a deadline changes live_deadline once, when it finishes: that one update, of
    // half the tasks, is a full one. Every other move is HOT.
    expect(hot).toBeGreaterThanOrEqual(updates - jobs / 2);
  });

  it('an index reading `state` again (the planted bug) makes every move a full update', async () => {
    const { updates, hot } = await runJobs(`CREATE INDEX planted_state ON tasks (deadline) WHERE state IN ('PENDING', 'RUNNING')`);
    expect(updates).toBeGreaterThanOrEqual(2 * jobs);
    expect(hot).toBe(0);
  });
});
