import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CandidateRequest, Store } from '@baton/core';
import { openStore } from '@baton-coordination/server/store/open-store';
import type { SqlParam, SqlQueryable } from '@baton-coordination/server/store/sql/driver';
import { sqlMessages } from '@baton-coordination/server/store/sql/repositories/messages';
import type { SqlStore } from '@baton-coordination/server/store/sql/sql-store';
import { createTestDatabase, insertTenant, postgresUrl, type TestDatabase } from './support/databases';

/**
 * The admission's candidate claim walks the partial index of READY deliveries in seq order and
 * stops at the first row it can lock, whatever the planner knows of the table. Two plans were
 * seen in drains instead (docs/benchmarks.md), each costing milliseconds a claim:
 *   - statistics taken while the queue filled say most rows are READY: the planner walks
 *     messages_by_mailbox past every row claimed so far (fixed by keeping no statistics of
 *     `state`, migration 012);
 *   - no statistics of the mailbox columns (a new table, or a mailbox far larger than the
 *     average): the planner expects a row or two, reads every live row of the mailbox
 *     (messages_live) and sorts them (first fixed by ruling sorting out of a one-scope claim
 *     with SET LOCAL enable_sort = off, two more statements per claim; since migration 029
 *     dropped messages_live, no index offers that plan any more, and the claim runs alone).
 * Here 12,000 deliveries are inserted (the drain's shape; with 2,000 the planner happens to be
 * right) and 5,000 of them finished, first with the table never analyzed, then analyzed while all
 * were READY. The claim must use messages_ready_deliveries in its custom plan and in its generic
 * plan (the one a prepared statement settles on). Each hazard is then planted back, to show the
 * check sees it.
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

const expectDirectWalk = (plan: PlanNode): void => {
  const indexes = indexesOf(plan);
  expect(indexes).toContain('messages_ready_deliveries');
  expect(indexes).not.toContain('messages_by_mailbox');
  expect(indexes).not.toContain('messages_live');
};

describe.runIf(postgresUrl())('candidate claim plan on PostgreSQL', () => {
  let db: TestDatabase;
  let store: Store;
  const spaceId = randomUUID();
  const mailboxId = randomUUID();
  /** The claim exactly as the repository sends it: the statements before it, and itself. */
  const before: string[] = [];
  let claim: { text: string; params: readonly SqlParam[] } | undefined;

  const sql = (): SqlStore['driver'] => (store as SqlStore).driver;
  const finish = async (): Promise<void> => {
    await sql().query(`UPDATE messages SET state = 'ACKED' WHERE space_id = $1 AND seq IN (SELECT seq FROM messages WHERE space_id = $1 ORDER BY seq LIMIT $2)`, [spaceId, finished]);
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    store = await openStore({ kind: 'postgres', url: db.url });
    // The test decides when statistics are taken.
    await sql().exec('ALTER TABLE messages SET (autovacuum_enabled = false)');
    await store.transaction((tx) => insertTenant(tx, randomUUID(), spaceId, T0));
    await store.transaction((tx) => tx.mailboxes.insert({ id: mailboxId, spaceId, name: 'plan-box', mode: 'WORK', recipientId: null, backlogLimit: 100_000, createdAt: T0, updatedAt: T0 }));
    // Deliveries of tasks, in bulk: the plan, not the task rows, is under test.
    await sql().query(
      `INSERT INTO messages (space_id, id, mailbox_id, scope_id, payload, state, attempt, created_at, updated_at, task_id)
       SELECT $1, gen_random_uuid()::text, $2, $1, '{}'::jsonb, 'READY', 0, now(), now(), gen_random_uuid()::text FROM generate_series(1, $3::int)`,
      [spaceId, mailboxId, deliveries],
    );
    await finish();

    const capture: SqlQueryable = {
      query: async (text, params = []) => {
        claim = { text, params };
        return [];
      },
      write: async (text) => {
        if (claim === undefined) before.push(text);
      },
      exec: async () => undefined,
    };
    const request: CandidateRequest = { spaceId, mailboxId, scopeIds: [spaceId], holder: 'w', holderSession: 's', tokenHash: 'h', leaseExpiresAt: T0 + 60_000, nowMs: T0, afterSeq: 0 };
    await sqlMessages(capture).claimCandidate(request);
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  /** EXPLAIN of the claim in a transaction that is rolled back; `setup` runs first in it. */
  async function explain(setup: string[], explained: string, params: readonly SqlParam[]): Promise<PlanNode> {
    let plan: PlanNode | undefined;
    await sql()
      .transaction(async (q) => {
        for (const statement of setup) await q.exec(statement);
        const [row] = await q.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) ${explained}`, params);
        plan = row!['QUERY PLAN'][0].Plan;
        throw new Error('roll back');
      })
      .catch((error: unknown) => {
        if (!(error instanceof Error) || error.message !== 'roll back') throw error;
      });
    return plan!;
  }

  let prepared = 0;
  /** Custom and generic plan of the claim, after `setup` (by default what the repository sends before it). */
  async function plans(setup = before): Promise<PlanNode[]> {
    if (claim === undefined) throw new Error('the repository sent no claim');
    // EXECUTE's arguments are not parameters of the statement around it: they go in as literals.
    const literals = claim.params.map((p) => (typeof p === 'number' ? String(p) : `'${String(p).replaceAll("'", "''")}'`)).join(', ');
    // PREPARE outlives the rolled-back transaction: a new name each time.
    const name = `claim_under_test_${++prepared}`;
    return [
      await explain(setup, claim.text, claim.params),
      await explain([...setup, `PREPARE ${name} AS ${claim.text}`, 'SET LOCAL plan_cache_mode = force_generic_plan'], `EXECUTE ${name}(${literals})`, []),
    ];
  }

  it('walks the READY deliveries in seq order on a table never analyzed, with nothing set before it', async () => {
    expect(before).toEqual([]);
    for (const plan of await plans()) expectDirectWalk(plan);
  });

  it('the check sees the sort over an index of all live rows on a table never analyzed (planted: messages_live back)', async () => {
    const planted = await plans(["CREATE INDEX messages_live ON messages (space_id, mailbox_id) WHERE state IN ('READY', 'CLAIMED')"]);
    expect(planted.flatMap(indexesOf)).toContain('messages_live');
    expect(() => planted.forEach(expectDirectWalk)).toThrow();
  });

  it('walks the READY deliveries in seq order with statistics taken while all were READY', async () => {
    await sql().exec(`UPDATE messages SET state = 'READY'; ANALYZE messages`);
    await finish();
    for (const plan of await plans()) expectDirectWalk(plan);
  });

  it('the check sees the walk past finished rows when the planner trusts statistics of state (planted)', async () => {
    await sql().exec(`ALTER TABLE messages ALTER COLUMN state SET STATISTICS -1; UPDATE messages SET state = 'READY'; ANALYZE messages`);
    await finish();
    try {
      const planted = await plans();
      expect(planted.flatMap(indexesOf)).toContain('messages_by_mailbox');
      expect(() => planted.forEach(expectDirectWalk)).toThrow();
    } finally {
      await sql().exec('ALTER TABLE messages ALTER COLUMN state SET STATISTICS 0; ANALYZE messages');
    }
  });
});
