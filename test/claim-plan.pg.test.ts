import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CandidateRequest, Store } from '@baton/core';
import { openStore } from '../server/src/store/open-store';
import type { SqlParam, SqlQueryable } from '../server/src/store/sql/driver';
import { sqlMessages } from '../server/src/store/sql/repositories/messages';
import type { SqlStore } from '../server/src/store/sql/sql-store';
import { createTestDatabase, insertTenant, postgresUrl, type TestDatabase } from './support/databases';

/**
 * The admission's candidate claim walks the partial index of READY deliveries whatever the
 * planner statistics say (migration 012). Measured in a drain (docs/benchmarks.md): with
 * statistics taken while the queue filled, the planner walked messages_by_mailbox past every
 * row claimed so far, 4,000 buffers a claim after 5,000 claims. Here a mailbox is analyzed while
 * all its 12,000 deliveries are READY, then 5,000 are finished (the drain's shape; with 2,000
 * and 1,500 even trusted statistics happen to give the right plan): the claim must reach the first
 * READY one through that index, not by stepping over the finished ones in seq order, in its
 * custom plan and in its generic plan (the one a prepared statement settles on). (The partial
 * index still holds entries of the finished rows until a vacuum; a scan marks those it finds
 * dead, so later scans skip them without reading the rows.)
 */

const T0 = Date.UTC(2026, 0, 1);
const deliveries = 12_000;
const finished = 5_000;

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

const indexesOf = (node: PlanNode): string[] => [...(node['Index Name'] ? [node['Index Name']] : []), ...(node.Plans ?? []).flatMap(indexesOf)];

describe.runIf(postgresUrl())('candidate claim plan on PostgreSQL', () => {
  let db: TestDatabase;
  let store: Store;
  const spaceId = randomUUID();
  const mailboxId = randomUUID();
  let claim: { text: string; params: readonly SqlParam[] };

  beforeAll(async () => {
    db = await createTestDatabase();
    store = await openStore({ kind: 'postgres', url: db.url });
    const driver = (store as SqlStore).driver;
    await store.transaction((tx) => insertTenant(tx, randomUUID(), spaceId, T0));
    await store.transaction((tx) => tx.mailboxes.insert({ id: mailboxId, spaceId, name: 'plan-box', mode: 'WORK', recipientId: null, backlogLimit: 100_000, createdAt: T0, updatedAt: T0 }));
    // Deliveries of tasks, in bulk: the plan, not the task rows, is under test.
    await driver.query(
      `INSERT INTO messages (space_id, id, mailbox_id, scope_id, payload, state, attempt, created_at, updated_at, task_id)
       SELECT $1, gen_random_uuid()::text, $2, $1, '{}'::jsonb, 'READY', 0, now(), now(), gen_random_uuid()::text FROM generate_series(1, $3::int)`,
      [spaceId, mailboxId, deliveries],
    );
    await driver.exec('ANALYZE messages');
    await driver.query(`UPDATE messages SET state = 'ACKED' WHERE space_id = $1 AND seq IN (SELECT seq FROM messages WHERE space_id = $1 ORDER BY seq LIMIT $2)`, [spaceId, finished]);

    // The statement exactly as the repository sends it.
    const capture: SqlQueryable = {
      query: async (text, params = []) => {
        claim = { text, params };
        return [];
      },
      write: async () => undefined,
      exec: async () => undefined,
    };
    const request: CandidateRequest = { spaceId, mailboxId, scopeIds: [spaceId], holder: 'w', holderSession: 's', tokenHash: 'h', leaseExpiresAt: T0 + 60_000, nowMs: T0, afterSeq: 0 };
    await sqlMessages(capture).claimCandidate(request);
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  /** EXPLAIN ANALYZE of the claim in a transaction that is rolled back; `setup` runs first in it. */
  async function explain(setup: string[], explained: string, params: readonly SqlParam[]): Promise<PlanNode> {
    const driver = (store as SqlStore).driver;
    let plan: PlanNode | undefined;
    await driver
      .transaction(async (q) => {
        for (const statement of setup) await q.exec(statement);
        const [row] = await q.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${explained}`, params);
        plan = row!['QUERY PLAN'][0].Plan;
        throw new Error('roll back');
      })
      .catch((error: unknown) => {
        if (!(error instanceof Error) || error.message !== 'roll back') throw error;
      });
    return plan!;
  }

  const expectDirectWalk = (plan: PlanNode): void => {
    expect(indexesOf(plan)).toContain('messages_ready_deliveries');
    expect(indexesOf(plan)).not.toContain('messages_by_mailbox');
  };

  it('reaches the first READY delivery directly in its custom plan', async () => {
    expectDirectWalk(await explain([], claim.text, claim.params));
  });

  let prepared = 0;
  /** The plan a prepared statement settles on once it stops planning for each execution's values. */
  const genericPlan = (): Promise<PlanNode> => {
    // EXECUTE's arguments are not parameters of the statement around it: they go in as literals.
    const literals = claim.params.map((p) => (typeof p === 'number' ? String(p) : `'${String(p).replaceAll("'", "''")}'`)).join(', ');
    // PREPARE outlives the rolled-back transaction: a new name each time.
    const name = `claim_under_test_${++prepared}`;
    return explain([`PREPARE ${name} AS ${claim.text}`, 'SET LOCAL plan_cache_mode = force_generic_plan'], `EXECUTE ${name}(${literals})`, []);
  };

  it('reaches the first READY delivery directly in its generic plan', async () => {
    expectDirectWalk(await genericPlan());
  });

  it('the check sees the walk when the planner trusts statistics of state (planted)', async () => {
    const driver = (store as SqlStore).driver;
    const finish = `UPDATE messages SET state = 'ACKED' WHERE space_id = $1 AND seq IN (SELECT seq FROM messages WHERE space_id = $1 ORDER BY seq LIMIT $2)`;
    // Statistics of state taken while every delivery was READY, as in a queue that just filled.
    await driver.exec(`ALTER TABLE messages ALTER COLUMN state SET STATISTICS -1; UPDATE messages SET state = 'READY'; ANALYZE messages`);
    await driver.query(finish, [spaceId, finished]);
    try {
      const plans = [await explain([], claim.text, claim.params), await genericPlan()];
      expect(plans.flatMap(indexesOf)).toContain('messages_by_mailbox');
      expect(() => plans.forEach(expectDirectWalk)).toThrow();
    } finally {
      await driver.exec('ALTER TABLE messages ALTER COLUMN state SET STATISTICS 0; ANALYZE messages');
    }
  });
});
