import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '@baton/core';
import { openStore } from '@baton-coordination/server/store/open-store';
import { SqlStore } from '@baton-coordination/server/store/sql/sql-store';
import { createTestDatabase, postgresUrl, type TestDatabase } from './support/databases';
import { ExplainingDriver, type ExplainedStatement, type PlanNode } from './support/explaining-driver';
import { idem, startTestServer, type Reply, type TestServer } from './support/server';

/**
 * Every statement of the hot requests reads about what it answers, however much the tables hold
 * (issue 28): a scan that reads more rows than its statement produces is the first sign of a cost
 * that grows with the backlog or the history (a count of the backlog per submit was one). The
 * space under test holds 2,000 READY tasks in the mailbox under test (another scope), 300
 * finished ones and 600 READY messages, filled after statistics of the empty tables were taken
 * and brought up to date by the store's own maintenance (Store.maintain), as in a deployment;
 * then every statement of submit, admit, complete, their batch twins, send, recv,
 * renew, nack, a task read and a journal read runs under EXPLAIN (ANALYZE, BUFFERS) (a rolled-back
 * savepoint before the real run: support/explaining-driver.ts) and each plan is checked:
 *
 *   rows its scans examined (returned plus removed by a filter, times loops) ≤
 *     (rows the statement produced + 1) × its scan nodes + slack
 *
 * `slack` is 64, the counter slots a backlog count may sum (message_counts, migration 028). A
 * planted plan hazard (the READY indexes dropped, so claims walk the mailbox's history) shows
 * the check fails.
 */

const slack = 64;
const backlog = 2_000;
const finished = 300;
const workScope = '11111111-1111-4111-8111-111111111111';
const backlogScope = '22222222-2222-4222-8222-222222222222';

const scanTypes = new Set(['Seq Scan', 'Index Scan', 'Index Only Scan', 'Bitmap Heap Scan', 'CTE Scan', 'Function Scan', 'Tid Scan']);
const tableScans = new Set(['Seq Scan', 'Index Scan', 'Index Only Scan', 'Bitmap Heap Scan', 'Tid Scan']);

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

interface Verdict {
  text: string;
  produced: number;
  examined: number;
  scans: number;
  allowed: number;
  buffers: number;
}

/** The rows a statement produced: what it returned, or what it modified (a ModifyTable's input). */
function producedBy(plan: PlanNode): number {
  const modified = nodesOf(plan)
    .filter((n) => n['Node Type'] === 'ModifyTable')
    .map((n) => (n.Plans?.[0]?.['Actual Rows'] ?? 0) * (n.Plans?.[0]?.['Actual Loops'] ?? 1));
  return Math.max(plan['Actual Rows'], ...modified);
}

function verdictOf(s: ExplainedStatement): Verdict {
  const scans = nodesOf(s.plan).filter((n) => tableScans.has(n['Node Type']));
  const examined = scans.reduce((sum, n) => sum + (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0)) * n['Actual Loops'], 0);
  const produced = producedBy(s.plan);
  return {
    text: s.text.replace(/\s+/g, ' ').slice(0, 160),
    produced,
    examined,
    scans: scans.length,
    allowed: (produced + 1) * Math.max(1, scans.length) + slack,
    buffers: (s.plan['Shared Hit Blocks'] ?? 0) + (s.plan['Shared Read Blocks'] ?? 0),
  };
}

describe.runIf(postgresUrl())('hot statement plans at a backlog, on PostgreSQL', () => {
  let db: TestDatabase;
  let plain: Store;
  let driver: ExplainingDriver;
  let server: TestServer;
  const ids: Record<string, string> = {};

  const call = async (method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown, status = 200): Promise<Reply> => {
    const reply = await server.api(method, path, method === 'GET' ? {} : { body, idem: idem() });
    expect(reply.statusCode, `${method} ${path}: ${JSON.stringify(reply.body)}`).toBe(status);
    return reply;
  };
  let n = 0;
  const tasks = (scopeId: string, count: number) => Array.from({ length: count }, () => ({ scopeId, mailboxId: ids.tasks, taskKey: `k-${++n}`, input: { n } }));
  const admitBatch = (scopeId: string, maxTasks: number) => call('POST', '/tasks/admit-batch', { scopeId, mailboxId: ids.tasks, holder: 'w', holderSession: 's', maxTasks, leaseSeconds: 300 });
  const completeAll = (items: { messageId: string; token: string }[]) => call('POST', '/messages/complete-batch', { items: items.map((d) => ({ messageId: d.messageId, token: d.token })) });

  beforeAll(async () => {
    db = await createTestDatabase();
    plain = await openStore({ kind: 'postgres', url: db.url });
    driver = new ExplainingDriver((plain as SqlStore).driver);
    server = await startTestServer(new SqlStore(driver));
    ids.tasks = (await call('POST', '/mailboxes', { name: 'plans-tasks', backlogLimit: 100_000 }, 201)).body.id;
    ids.box = (await call('POST', '/mailboxes', { name: 'plans-box', backlogLimit: 100_000 }, 201)).body.id;
    await server.admin('PUT', `/orgs/${server.orgId}/plan`, { plan: 'ENTERPRISE' });
    await call('PUT', '/limits', { maxBacklog: 100_000 });
    // Statistics of nearly empty tables, as a new deployment has: the fill below grows them, and
    // the store's own maintenance (not a test's ANALYZE) must bring the plans along.
    await driver.exec('ANALYZE');
    for (let i = 0; i < backlog / 100; i++) await call('POST', '/tasks/submit-batch', { tasks: tasks(backlogScope, 100) });
    for (let i = 0; i < finished / 100; i++) {
      await call('POST', '/tasks/submit-batch', { tasks: tasks(workScope, 100) });
      await completeAll((await admitBatch(workScope, 100)).body.items);
    }
    const depth = (await call('GET', '/diagnostics/backlog')).body.items.find((m: { mailboxId: string }) => m.mailboxId === ids.tasks);
    expect(depth).toMatchObject({ ready: backlog, claimed: 0 });
    for (let i = 0; i < 600; i++) await call('POST', `/mailboxes/${ids.box}/messages`, { scopeId: backlogScope, payload: { i } }, 201);
    // PostgreSQL's row counters reach pg_stat a moment after each commit: maintain until it saw them.
    const analyzedRows = async (): Promise<number> => {
      const [row] = await driver.query<{ n: number }>(`SELECT min(reltuples)::int AS n FROM pg_class WHERE relname IN ('messages', 'idempotency_keys')`);
      return row!.n;
    };
    for (let tries = 0; (await analyzedRows()) < 600; tries++) {
      if (tries === 80) throw new Error('Store.maintain never analyzed the grown tables');
      await plain.maintain();
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    await plain?.close();
    await db?.drop();
  });

  /** The verdicts of every statement `work` sent. */
  async function explained(work: () => Promise<unknown>): Promise<Verdict[]> {
    driver.explained.length = 0;
    driver.recording = true;
    try {
      await work();
    } finally {
      driver.recording = false;
    }
    expect(driver.explained.length).toBeGreaterThan(0);
    return driver.explained.map(verdictOf);
  }

  async function hotRequests(): Promise<void> {
    const submitted = await call('POST', '/tasks', { scopeId: workScope, mailboxId: ids.tasks, taskKey: `k-${++n}`, input: {} }, 201);
    const admitted = await call('POST', '/tasks/admit', { scopeId: workScope, mailboxId: ids.tasks, holder: 'w', holderSession: 's', leaseSeconds: 300 });
    await call('POST', `/messages/${admitted.body.messageId}/complete`, { token: admitted.body.token, result: { payload: { ok: true } } });
    await call('GET', `/tasks/${submitted.body.taskId}`);
    await call('POST', '/tasks/submit-batch', { tasks: tasks(workScope, 20) });
    await completeAll((await admitBatch(workScope, 20)).body.items);
    await call('POST', `/mailboxes/${ids.box}/messages`, { scopeId: workScope, payload: {} }, 201);
    await call('POST', `/mailboxes/${ids.box}/messages`, { scopeId: workScope, payload: {} }, 201);
    const first = await call('POST', `/mailboxes/${ids.box}/recv`, { scopeId: workScope, holder: 'w', holderSession: 's', leaseSeconds: 60 });
    await call('POST', `/messages/${first.body.messageId}/renew`, { token: first.body.token, leaseSeconds: 60 });
    await call('POST', `/messages/${first.body.messageId}/nack`, { token: first.body.token, retry: true });
    await call('GET', '/events?limit=50');
  }

  it('every statement of the hot requests examines about the rows it produces, with 2,000 READY and 300 finished tasks and 600 messages in the space', async () => {
    const verdicts = await explained(hotRequests);
    if (process.env.HOT_PLANS_PRINT) console.table(verdicts.map((v) => ({ ...v, text: v.text.slice(0, 90) })));
    const over = verdicts.filter((v) => v.examined > v.allowed);
    expect(over, JSON.stringify(over, null, 1)).toEqual([]);
    // Sanity: the batch statements are among those checked.
    expect(verdicts.some((v) => v.produced >= 20)).toBe(true);
  });

  it('the check sees a claim that walks the history (planted: the READY indexes dropped)', async () => {
    await driver.exec('DROP INDEX messages_ready; DROP INDEX messages_ready_deliveries');
    try {
      const verdicts = await explained(async () => {
        await call('POST', '/tasks/submit-batch', { tasks: tasks(workScope, 2) });
        await admitBatch(workScope, 2);
      });
      expect(verdicts.filter((v) => v.examined > v.allowed).length).toBeGreaterThan(0);
    } finally {
      await driver.exec(`CREATE INDEX messages_ready ON messages (space_id, mailbox_id, scope_id, seq) WHERE state = 'READY';
        CREATE INDEX messages_ready_deliveries ON messages (space_id, mailbox_id, scope_id, seq) WHERE state = 'READY' AND task_id IS NOT NULL`);
    }
  });
});
