import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SystemClock } from '@baton/core';
import { createBaton, type Baton } from '@baton-coordination/server/host/baton';
import { openStore } from '@baton-coordination/server/store/open-store';
import type { Store } from '@baton/core';
import { createTestDatabase, postgresUrl, type TestDatabase } from './support/databases';

/**
 * The organization's request rate across servers (issue 16, docs/design/0016-limits-and-retry-after.md): two Baton servers on
 * one PostgreSQL, real HTTP over loopback, each deciding in memory and syncing counts every
 * 500 ms. Accepted ordinary calls stay within 80 % of the limit plus one second of the traffic,
 * and recovery calls keep passing after ordinary calls are refused.
 */

/** The system clock shifted so the test starts half a second into a calendar minute: the run fits in one window. */
class MinuteAlignedClock extends SystemClock {
  private readonly shiftMs: number;
  constructor() {
    super();
    const now = Date.now();
    this.shiftMs = Math.ceil(now / 60_000) * 60_000 + 500 - now;
  }
  override now(): number {
    return Date.now() + this.shiftMs;
  }
}

const adminToken = 'rate-two-servers';
const perMinute = 2_000;
const ordinaryAllowed = perMinute * 0.8;

describe.runIf(postgresUrl())('the organization rate on two servers on one PostgreSQL', () => {
  let db: TestDatabase;
  const servers: { baton: Baton; store: Store; url: string }[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    const clock = new MinuteAlignedClock();
    for (let i = 0; i < 2; i++) {
      const store = await openStore({ kind: 'postgres', url: db.url });
      const baton = await createBaton({ store, clock, adminToken });
      baton.limitsSync.start();
      const url = await baton.app.listen({ host: '127.0.0.1', port: 0 });
      servers.push({ baton, store, url });
    }
  });
  afterAll(async () => {
    for (const s of servers) {
      await s.baton.drainAndClose();
      await s.store.close();
    }
    await db?.drop();
  });

  const call = async (server: number, method: string, path: string, token: string, body?: unknown) => {
    const res = await fetch(`${servers[server]!.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    await res.arrayBuffer();
    return res.status;
  };

  /** `workers` loops per server calling until `stop`; counts each status and when the passes happened. */
  const load = async (workers: number, request: (server: number) => Promise<number>, stop: (tally: Tally) => boolean): Promise<Tally> => {
    const tally: Tally = { passed: 0, refused: 0, other: 0, firstMs: performance.now(), lastPassMs: 0 };
    const loop = async (server: number) => {
      while (!stop(tally)) {
        const status = await request(server);
        if (status === 429) tally.refused++;
        else if (status < 500) {
          tally.passed++;
          tally.lastPassMs = performance.now();
        } else tally.other++;
      }
    };
    await Promise.all(Array.from({ length: workers * 2 }, (_, i) => loop(i % 2)));
    return tally;
  };

  it('holds ordinary calls to 80 % of the limit plus one second of traffic, and recovery calls still pass', async () => {
    const admin = (path: string, body: unknown) =>
      fetch(`${servers[0]!.url}/admin/v1${path}`, { method: 'POST', headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<any>);
    const org = await admin('/orgs', { name: 'busy', plan: 'ENTERPRISE', limits: { requestsPerMinute: perMinute } });
    const space = await admin(`/orgs/${org.id}/spaces`, { name: 'main' });
    const key = (await admin(`/orgs/${org.id}/keys`, { name: 'k' })).secret as string;
    const base = `/v1/spaces/${space.id}`;

    // Ordinary reads on both servers until both have refused for a while.
    const ordinary = await load(8, (s) => call(s, 'GET', `${base}/limits`, key), (t) => t.refused >= 400);
    const seconds = (ordinary.lastPassMs - ordinary.firstMs) / 1000;
    const perSecond = ordinary.passed / seconds;
    console.log(`two servers, limit ${perMinute}/min: ${ordinary.passed} ordinary calls passed in ${seconds.toFixed(2)} s (${perSecond.toFixed(0)}/s), allowed ${ordinaryAllowed}, over by ${ordinary.passed - ordinaryAllowed}`);
    expect(ordinary.other).toBe(0);
    expect(ordinary.passed).toBeGreaterThanOrEqual(ordinaryAllowed);
    expect(ordinary.passed).toBeLessThanOrEqual(ordinaryAllowed + perSecond);

    // Recovery calls (a cancel of an unknown waiter answers 404: let through, then not found) still pass on both.
    const cancel = (s: number) => call(s, 'POST', `${base}/allowance-waiters/${crypto.randomUUID()}/cancel`, key);
    const statuses = await Promise.all(Array.from({ length: 40 }, (_, i) => cancel(i % 2)));
    expect(statuses.every((s) => s === 404)).toBe(true);
    expect(await call(0, 'GET', `${base}/limits`, key)).toBe(429);
    expect(await call(1, 'GET', `${base}/limits`, key)).toBe(429);

    // And they too stop at the whole limit, within one second of traffic.
    const recovery = await load(8, cancel, (t) => t.refused >= 400);
    const total = ordinary.passed + 40 + recovery.passed;
    console.log(`then ${40 + recovery.passed} recovery calls passed: ${total} in all of ${perMinute}`);
    expect(total).toBeLessThanOrEqual(perMinute + perSecond);
    expect(total).toBeGreaterThanOrEqual(perMinute);
  }, 50_000);
});
interface Tally {
  passed: number;
  refused: number;
  other: number;
  firstMs: number;
  lastPassMs: number;
}
