import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SystemClock } from '@baton/core';
import { createBaton, type Baton } from '@baton-coordination/server/host/baton';
import { PgNotifier } from '@baton-coordination/server/notify/pg-notifier';
import { openStore } from '@baton-coordination/server/store/open-store';
import type { SqlStore } from '@baton-coordination/server/store/sql/sql-store';
import { PlantedStore } from '../sim/src/bugs/planted-store';
import { createTestDatabase, postgresUrl, type TestDatabase } from './support/databases';

/**
 * Task groups decide exactly once when verdicts, seals, closes, cancels and member completions
 * race on two servers sharing one PostgreSQL (core/src/groups/service.ts, docs/lock-order.md).
 * Every call that can change a group's decision locks the group row; a decision reaches for
 * its live members with NOWAIT and the store retries the transaction when one is busy. Real
 * time, real connection pools: the calls of one round are fired together, not one by one.
 */

const clock = new SystemClock();
const adminToken = 'group-races-admin';
const parentScopeId = '33333333-3333-4333-8333-333333333333';
const rounds = Number(process.env.RACE_ROUNDS ?? 24);

interface Delivery {
  messageId: string;
  taskId: string;
  token: string;
}

interface Reply {
  statusCode: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON replies, checked field by field
}

describe.runIf(postgresUrl())('task groups racing on two servers over one PostgreSQL', () => {
  let db: TestDatabase;
  const servers: { baton: Baton; store: SqlStore; notifier: PgNotifier }[] = [];
  let key = '';
  let base = '';
  let box = '';
  /** The planted group-skips-lock, at the store seam: a group is read without its row lock. */
  let skipGroupLock = false;

  const call = async (on: Baton, method: 'GET' | 'POST', url: string, body?: object): Promise<Reply> => {
    const res = await on.app.inject({ method, url: `${base}${url}`, headers: { authorization: `Bearer ${key}`, 'idempotency-key': `race-${Math.random()}` }, ...(body ? { payload: body } : {}) });
    return { statusCode: res.statusCode, body: JSON.parse(res.body) };
  };
  const server = (i: number): Baton => servers[i % servers.length]!.baton;

  beforeAll(async () => {
    db = await createTestDatabase();
    for (let i = 0; i < 2; i++) {
      const store = (await openStore({ kind: 'postgres', url: db.url })) as SqlStore;
      const notifier = await PgNotifier.start({ url: db.url, clock });
      const planted = new PlantedStore(store, (tx) => (skipGroupLock ? { taskGroups: { get: (spaceId, id) => tx.taskGroups.get(spaceId, id) } } : {}));
      servers.push({ baton: await createBaton({ store: planted, clock, adminToken, notifier }), store, notifier });
    }
    const admin = async (url: string, body: object) => JSON.parse((await server(0).app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${adminToken}` }, payload: body })).body);
    const org = await admin('/admin/v1/orgs', { name: 'races', plan: 'TEAM' });
    const space = await admin(`/admin/v1/orgs/${org.id}/spaces`, { name: 'main' });
    key = (await admin(`/admin/v1/orgs/${org.id}/keys`, { name: 'test' })).secret;
    base = `/v1/spaces/${space.id}`;
    box = (await call(server(0), 'POST', '/mailboxes', { name: 'races' })).body.id;
  });
  afterAll(async () => {
    for (const s of servers) {
      await s.baton.drainAndClose();
      await s.notifier.close();
      await s.store.close();
    }
    await db?.drop();
  });

  /** A group of `size` members, each admitted (claimed) by a worker, ready to be finished. */
  async function admittedGroup(round: number, size: number) {
    const condition = (['FIRST_ACCEPTED', 'N_ACCEPTED', 'ALL_TERMINAL'] as const)[round % 3];
    const body = { mailboxId: box, parentScopeId, condition, ...(condition === 'N_ACCEPTED' ? { threshold: 2 } : {}) };
    const created = await call(server(round), 'POST', '/task-groups', body);
    expect(created.statusCode).toBe(201);
    const groupId: string = created.body.groupId;
    for (let i = 0; i < size; i++) expect((await call(server(i), 'POST', `/task-groups/${groupId}/tasks`, { taskKey: `r${round}-m${i}`, input: i })).statusCode).toBe(201);
    const deliveries: Delivery[] = [];
    for (let i = 0; i < size; i++) {
      const admitted = await call(server(i), 'POST', '/tasks/admit', { mailboxId: box, scopeId: parentScopeId, holder: `w${i}`, holderSession: 's' });
      expect(admitted.statusCode).toBe(200);
      deliveries.push(admitted.body);
    }
    return { groupId, condition, deliveries };
  }

  /** Keeps trying to accept a member from alternating servers until it is no longer running: the verifier racing the workers. */
  async function acceptWhenDone(groupId: string, taskId: string, from: number): Promise<Reply[]> {
    const replies: Reply[] = [];
    for (let i = 0; i < 40; i++) {
      const reply = await call(server(from + i), 'POST', `/task-groups/${groupId}/tasks/${taskId}/accept`);
      replies.push(reply);
      if (reply.statusCode === 200 || !/RUNNING|PENDING/.test(reply.body.error?.message ?? '')) break;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    return replies;
  }

  /**
   * One group of four admitted members: 0 and 1 succeed, 2 fails, 3 is cancelled, while
   * verifiers accept 0 and 1, and a seal and two closes come in, all at once on both servers.
   */
  async function raceRound(round: number): Promise<{ groupId: string; condition: string | undefined; replies: Reply[] }> {
    const { groupId, condition, deliveries } = await admittedGroup(round, 4);
    const [d0, d1, d2, d3] = deliveries as [Delivery, Delivery, Delivery, Delivery];
    const racing: Promise<Reply | Reply[]>[] = [
      call(server(round), 'POST', `/messages/${d0.messageId}/complete`, { token: d0.token, result: { payload: 'a' } }),
      call(server(round + 1), 'POST', `/messages/${d1.messageId}/complete`, { token: d1.token, result: { payload: 'b' } }),
      call(server(round), 'POST', `/messages/${d2.messageId}/nack`, { token: d2.token, retry: false }),
      call(server(round + 1), 'POST', `/tasks/${d3.taskId}/cancel`, { reason: 'race' }),
      acceptWhenDone(groupId, d0.taskId, round),
      acceptWhenDone(groupId, d1.taskId, round + 1),
      call(server(round), 'POST', `/task-groups/${groupId}/seal`),
      call(server(round + 1), 'POST', `/task-groups/${groupId}/close`),
      call(server(round), 'POST', `/task-groups/${groupId}/close`),
    ];
    return { groupId, condition, replies: (await Promise.all(racing)).flat() };
  }

  const decisionsOf = (events: any[], groupId: string) => events.filter((e) => e.type === 'group.decided' && e.aggregate.id === groupId); // eslint-disable-line @typescript-eslint/no-explicit-any

  it('decides every group exactly once, consistently with its members, whatever order the racing calls land in', async () => {
    const raced: Awaited<ReturnType<typeof raceRound>>[] = [];
    for (let round = 0; round < rounds; round++) raced.push(await raceRound(round));

    const unexpected = raced.flatMap((r) => r.replies).filter((r) => ![200, 409].includes(r.statusCode));
    expect(unexpected).toEqual([]);
    // Polled, as a client does: the journal holds back the newest events while an older
    // transaction (another test file's, on the same PostgreSQL) is still open.
    const events = await eventsWhen((all) => raced.every(({ groupId }) => decisionsOf(all, groupId).length > 0));
    for (const { groupId, condition } of raced) {
      const view = (await call(server(0), 'GET', `/task-groups/${groupId}`)).body;
      const decided = decisionsOf(events, groupId);
      expect(decided, `group ${groupId}`).toHaveLength(1);
      expect(view.state).toBe('DECIDED');
      expect({ outcome: view.outcome, outcomeReason: view.outcomeReason }).toEqual({ outcome: decided[0].data.outcome, outcomeReason: decided[0].data.outcomeReason });
      expect(view.members.every((m: { taskState: string }) => !['PENDING', 'RUNNING'].includes(m.taskState))).toBe(true);
      expectAgrees(condition, decided[0].data);
    }
    const retried = servers.reduce((n, s) => n + s.store.retriedTransactions, 0);
    console.info(`group races: ${rounds} groups, ${raced.flatMap((r) => r.replies).length} calls, ${retried} transactions retried after a lock conflict`);
  }, 120_000);

  it('catches the race when the group lock is skipped (planted group-skips-lock): a group decided more than once', async () => {
    skipGroupLock = true;
    try {
      let doubled: string | undefined;
      for (let round = 1_000; round < 1_060 && doubled === undefined; round++) {
        const { groupId } = await raceRound(round);
        if (decisionsOf(await readEvents(), groupId).length > 1) doubled = groupId;
      }
      expect(doubled, 'no group was decided twice in 60 racing rounds without the lock').toBeDefined();
    } finally {
      skipGroupLock = false;
    }
  }, 120_000);

  /** The decision agrees with the members as the group.decided event counted them at that moment. */
  function expectAgrees(condition: string | undefined, d: { outcome: string; outcomeReason: string; members: number; accepted: number; terminal: number; from: string }): void {
    const threshold = condition === 'N_ACCEPTED' ? 2 : 1;
    if (d.outcomeReason === 'THRESHOLD_MET') expect(d.accepted).toBeGreaterThanOrEqual(threshold);
    if (d.outcomeReason === 'THRESHOLD_UNREACHABLE') expect(d.accepted).toBeLessThan(threshold);
    if (d.outcomeReason === 'ALL_TERMINAL') expect([d.from, d.terminal]).toEqual(['SEALED', d.members]);
    expect(d.outcomeReason === 'THRESHOLD_MET' || d.outcomeReason === 'ALL_TERMINAL').toBe(d.outcome === 'SUCCEEDED');
    expect(['THRESHOLD_MET', 'THRESHOLD_UNREACHABLE', 'ALL_TERMINAL']).toContain(d.outcomeReason);
    if (condition === 'ALL_TERMINAL') expect(d.outcomeReason).toBe('ALL_TERMINAL');
  }

  async function eventsWhen(ready: (events: any[]) => boolean): Promise<any[]> { // eslint-disable-line @typescript-eslint/no-explicit-any -- as readEvents
    for (let attempt = 0; ; attempt++) {
      const events = await readEvents();
      if (ready(events) || attempt >= 100) return events;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function readEvents(): Promise<any[]> { // eslint-disable-line @typescript-eslint/no-explicit-any -- journal events, checked field by field
    const out = [];
    // The journal always answers a cursor to resume from: an empty page is the end of it.
    for (let cursor = ''; ; ) {
      const page: Reply = await call(server(0), 'GET', `/events?limit=500${cursor ? `&cursor=${cursor}` : ''}`);
      if (page.body.items.length === 0) break;
      out.push(...page.body.items);
      cursor = page.body.nextCursor;
    }
    return out;
  }
});
