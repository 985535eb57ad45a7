import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, type Store } from '@baton/core';
import { createBaton, type Baton } from '@baton-coordination/server/host/baton';
import { openStore } from '@baton-coordination/server/store/open-store';
import { createTestDatabase, postgresUrl, type TestDatabase } from './support/databases';
import { startMs } from './support/server';

/**
 * Claims racing on one claimKey from two Baton servers on one PostgreSQL (docs/design/0020-claims.md). Workers
 * on both servers claim the key over and over; a holder releases or walks away, and a manual
 * clock moved by the test runs leases out while both servers sweep. Checked afterwards from the
 * journal (causal order, docs/event-journal.md) and the claim list: never two holders at once,
 * and fencing tokens 1, 2, 3, ... in acquisition order, each claim acquired exactly once.
 */

const adminToken = 'claims-race';
const scopeId = '33333333-3333-4333-8333-333333333333';
const claimKey = 'race/the-one-key';
const workersPerServer = 8;
const attemptsPerWorker = 250;

interface Reply {
  statusCode: number;
  body: any;
}

describe.runIf(postgresUrl())('claims racing on one key from two servers on one PostgreSQL', () => {
  let db: TestDatabase;
  const clock = new ManualClock(startMs);
  const servers: { baton: Baton; store: Store }[] = [];
  let spacePath = '';
  let token = '';

  const call = async (server: number, method: 'GET' | 'POST', path: string, body?: unknown, idem?: string): Promise<Reply> => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (idem !== undefined) headers['idempotency-key'] = idem;
    const res = await servers[server]!.baton.app.inject({ method, url: `${spacePath}${path}`, headers, ...(body === undefined ? {} : { payload: body as object }) });
    return { statusCode: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined };
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    for (let i = 0; i < 2; i++) {
      const store = await openStore({ kind: 'postgres', url: db.url });
      servers.push({ baton: await createBaton({ store, clock, adminToken }), store });
    }
    const admin = (method: 'POST', url: string, body: unknown) =>
      servers[0]!.baton.app.inject({ method, url: `/admin/v1${url}`, headers: { authorization: `Bearer ${adminToken}` }, payload: body as object }).then((r) => JSON.parse(r.body));
    // SCALE: 20,000 requests a minute, room for the whole run.
    const org = await admin('POST', '/orgs', { name: 'race', plan: 'SCALE' });
    const space = await admin('POST', `/orgs/${org.id}/spaces`, { name: 'main' });
    token = (await admin('POST', `/orgs/${org.id}/keys`, { name: 'k' })).secret;
    spacePath = `/v1/spaces/${space.id}`;
  });
  afterAll(async () => {
    for (const s of servers) {
      await s.baton.drainAndClose();
      await s.store.close();
    }
    await db?.drop();
  });

  it('never has two holders at once, and fencing tokens grow by one in acquisition order', { timeout: 240_000 }, async () => {
    /** Every claim a worker got (201): id, fencing token and who. */
    const granted = new Map<string, { fencingToken: number; holder: string }>();
    const tally = { acquired: 0, same: 0, held: 0, released: 0, lostOnRelease: 0, abandoned: 0 };
    let running = true;
    let idemCounter = 0;

    const worker = async (server: number, n: number): Promise<void> => {
      const who = { holder: `worker-${server}-${n}`, holderSession: `session-${server}-${n}-${Math.random()}` };
      for (let attempt = 0; attempt < attemptsPerWorker; attempt++) {
        const got = await call(server, 'POST', '/claims', { claimKey, scopeId, ...who, leaseSeconds: 5 }, `race-${++idemCounter}`);
        if (got.statusCode === 409) {
          expect(got.body.error.code).toBe('CLAIM_HELD');
          tally.held += 1;
          continue;
        }
        if (got.statusCode === 200) {
          // A claim this worker walked away from, still live: the same claim again.
          expect(granted.get(got.body.id)?.holder).toBe(who.holder);
          tally.same += 1;
        } else {
          expect(got.statusCode, JSON.stringify(got.body)).toBe(201);
          expect(granted.has(got.body.id)).toBe(false);
          granted.set(got.body.id, { fencingToken: got.body.fencingToken, holder: who.holder });
          tally.acquired += 1;
        }
        if (Math.random() < 0.25) {
          tally.abandoned += 1; // let it expire
          continue;
        }
        const released = await call(server, 'POST', `/claims/${got.body.id}/release`, { token: got.body.token });
        if (released.statusCode === 200) tally.released += 1;
        else {
          // The clock ran the lease out before the release got there.
          expect(released.body.error.code).toBe('LEASE_LOST');
          tally.lostOnRelease += 1;
        }
      }
    };
    /** Runs leases out: a second of service time every few milliseconds; leases are 5 s. */
    const clockMover = async (): Promise<void> => {
      while (running) {
        clock.advance(1_000);
        await new Promise((r) => setTimeout(r, 3));
      }
    };
    /** Both servers sweep at once, over and over (SKIP LOCKED), while claims race. */
    const sweeper = async (server: number): Promise<void> => {
      while (running) {
        await servers[server]!.baton.deps.runDueWork();
        await new Promise((r) => setTimeout(r, 5));
      }
    };

    const background = [clockMover(), sweeper(0), sweeper(1)];
    const workers = [0, 1].flatMap((server) => Array.from({ length: workersPerServer }, (_, n) => worker(server, n)));
    try {
      await Promise.all(workers);
    } finally {
      running = false;
      await Promise.all(background);
    }
    clock.advance(10_000);
    await servers[0]!.baton.deps.runDueWork();

    const attempts = 2 * workersPerServer * attemptsPerWorker;
    expect(tally.acquired + tally.same + tally.held).toBe(attempts);
    expect(tally.acquired).toBeGreaterThan(200);
    expect(tally.held).toBeGreaterThan(0);

    // The claim list: every claim a worker got, fencing tokens 1..n each once, all ended now.
    const listed: any[] = [];
    for (let cursor: string | null = null; ; ) {
      const page: Reply = await call(1, 'GET', `/claims?claimKey=${encodeURIComponent(claimKey)}&limit=500${cursor ? `&cursor=${cursor}` : ''}`);
      listed.push(...page.body.items);
      cursor = page.body.nextCursor;
      if (cursor === null) break;
    }
    expect(listed).toHaveLength(granted.size);
    for (const c of listed) expect(granted.get(c.id)?.fencingToken).toBe(c.fencingToken);
    expect(listed.map((c) => c.fencingToken).sort((x, y) => x - y)).toEqual(Array.from({ length: granted.size }, (_, i) => i + 1));
    expect(listed.filter((c) => c.state === 'HELD')).toEqual([]);

    // The journal, in its causal order: acquisitions alternate with ends, and tokens count up. An
    // event is readable once no older transaction of the whole PostgreSQL server is open, and
    // other test files share it: read on, as a client does, until every claim's two events are in.
    const events: any[] = [];
    const claimEvents = (): number => events.filter((x) => x.aggregate.type === 'claim' && x.type !== 'claim.renewed').length;
    for (let cursor: string | undefined, attempt = 0; attempt < 200; ) {
      const page: Reply = await call(0, 'GET', `/events?limit=500${cursor ? `&cursor=${cursor}` : ''}`);
      events.push(...page.body.items);
      cursor = page.body.nextCursor;
      if (page.body.items.length > 0) continue;
      if (claimEvents() >= 2 * granted.size) break;
      attempt++;
      await new Promise((r) => setTimeout(r, 50));
    }
    let holding: { id: string; fencingToken: number } | null = null;
    let lastFencingToken = 0;
    const ended = new Map<string, number>();
    for (const e of events.filter((x) => x.aggregate.type === 'claim')) {
      if (e.type === 'claim.acquired') {
        expect(holding, `claim ${e.aggregate.id} acquired while ${holding?.id} held the key`).toBeNull();
        expect(e.data.fencingToken).toBe(lastFencingToken + 1);
        holding = { id: e.aggregate.id, fencingToken: e.data.fencingToken };
        lastFencingToken = e.data.fencingToken;
      } else if (e.type === 'claim.released' || e.type === 'claim.expired') {
        expect(e.aggregate.id).toBe(holding?.id);
        ended.set(e.aggregate.id, (ended.get(e.aggregate.id) ?? 0) + 1);
        holding = null;
      }
    }
    expect(lastFencingToken).toBe(granted.size);
    expect(ended.size).toBe(granted.size);
    expect([...ended.values()].every((n) => n === 1)).toBe(true);
    console.info(`claims race: ${attempts} attempts, ${JSON.stringify(tally)}`);
  });
});
