import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { SystemClock } from '@baton/core';
import { createBaton, type Baton } from '@baton-coordination/server/host/baton';
import { encodePayloads, maxPayloadBytes, PgNotifier, type NotifierLogger } from '@baton-coordination/server/notify/pg-notifier';
import { openStore } from '@baton-coordination/server/store/open-store';
import { SqlStore } from '@baton-coordination/server/store/sql/sql-store';
import { createTestDatabase, postgresUrl, type TestDatabase } from './support/databases';

/**
 * Long polls woken across servers that share one PostgreSQL (server/src/notify/pg-notifier.ts,
 * docs/architecture-notes.md). Real time throughout: SystemClock, real LISTEN/NOTIFY.
 */

const clock = new SystemClock();
const elapsedSince = (start: number): number => performance.now() - start;

interface LogLine {
  level: 'info' | 'warn' | 'error';
  msg: string;
}
function recorder(lines: LogLine[]): NotifierLogger {
  return {
    info: (_o, msg) => lines.push({ level: 'info', msg }),
    warn: (_o, msg) => lines.push({ level: 'warn', msg }),
    error: (_o, msg) => lines.push({ level: 'error', msg }),
  };
}

describe('encodePayloads', () => {
  it('puts a commit\'s topics in one payload and splits under the 8000-byte limit', () => {
    expect(encodePayloads('s1', ['barrier:a', 'waiter:b']).payloads).toEqual(['{"s":"s1","t":["barrier:a","waiter:b"]}']);
    const topics = Array.from({ length: 500 }, (_, i) => `barrier:${String(i).padStart(36, '0')}`);
    const { payloads, tooLong } = encodePayloads('s1', topics);
    expect(tooLong).toEqual([]);
    expect(payloads.length).toBeGreaterThan(1);
    for (const p of payloads) expect(Buffer.byteLength(p)).toBeLessThanOrEqual(maxPayloadBytes);
    expect(payloads.flatMap((p) => (JSON.parse(p) as { t: string[] }).t)).toEqual(topics);
    expect(encodePayloads('s1', ['x'.repeat(9000)]).tooLong).toHaveLength(1);
  });
});

describe.runIf(postgresUrl())('PgNotifier on PostgreSQL', () => {
  let db: TestDatabase;
  const open: PgNotifier[] = [];
  const start = async (extra: Partial<Parameters<typeof PgNotifier.start>[0]> = {}): Promise<PgNotifier> => {
    const n = await PgNotifier.start({ url: db.url, clock, ...extra });
    open.push(n);
    return n;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    for (const n of open) await n.close();
    await db?.drop();
  });

  it('a notify on A wakes a wait on B within a second, and does not come back to A', async () => {
    const a = await start();
    const b = await start();
    expect(a.isListening && b.isListening).toBe(true);
    // A publishes once it knows B is there (B's hello, or its count of listeners): until then a
    // newcomer is covered by its own re-read a second after it connects, which is what a busy
    // machine used to time here instead of the notification.
    await expect.poll(() => a.peerState, { timeout: 10_000, interval: 10 }).toBe('present');

    const t0 = performance.now();
    const onB = b.wait('barrier:x', 10_000);
    a.notify('barrier:x');
    await onB;
    const crossed = elapsedSince(t0);
    expect(crossed).toBeLessThan(1_000);

    // Armed right after A's own notify: an echo over LISTEN would wake it early.
    const t1 = performance.now();
    await a.wait('barrier:x', 700);
    expect(elapsedSince(t1)).toBeGreaterThan(600);
    expect(a.stats.received).toBe(0);
    expect(a.stats.ownIgnored).toBeGreaterThanOrEqual(1);
    expect(b.stats.received).toBe(1);
  });

  it('batches the topics notified in one tick into one notification', async () => {
    const a = await start();
    const b = await start();
    const before = a.stats.published;
    const waits = ['barrier:1', 'barrier:2', 'waiter:3'].map((t) => b.wait(t, 5_000));
    for (const t of ['barrier:1', 'barrier:2', 'waiter:3']) a.notify(t);
    await Promise.all(waits);
    // Under load b's waits can also be woken by its own re-read fallback before a's publish
    // lands, so wait for the publish, then make sure no second one followed.
    await expect.poll(() => a.stats.published - before, { timeout: 5_000, interval: 10 }).toBeGreaterThanOrEqual(1);
    await new Promise((r) => setTimeout(r, 50));
    expect(a.stats.published - before).toBe(1);
  });

  it('reconnects a terminated listener: a parked wait re-reads on reconnect, and a later notify arrives', async () => {
    const lines: LogLine[] = [];
    const a = await start();
    const b = await start({ logger: recorder(lines), reconnectMinMs: 300 });
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    try {
      const parkedBefore = b.wait('barrier:down', 10_000);
      const t0 = performance.now();
      const killed = await admin.query('SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1', [`baton-wake ${b.serverId}`]);
      expect(killed.rows).toEqual([{ ok: true }]);
      await expect.poll(() => b.isListening, { timeout: 2_000, interval: 5 }).toBe(false);
      // Down or just back: the parked wait is woken to re-read (no wake lost for good).
      await parkedBefore;
      expect(elapsedSince(t0)).toBeLessThan(2_000);

      await expect.poll(() => b.isListening, { timeout: 5_000, interval: 20 }).toBe(true);
      expect(b.stats.connects).toBe(2);
      expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining([expect.stringContaining('listener down'), expect.stringContaining('reconnected')]));

      const t1 = performance.now();
      const onB = b.wait('barrier:after', 10_000);
      a.notify('barrier:after');
      await onB;
      expect(elapsedSince(t1)).toBeLessThan(1_000);
      expect(b.stats.received).toBeGreaterThanOrEqual(1);
    } finally {
      await admin.end();
    }
  });

  it('while the listener is down, parked waits are woken every second to re-read', async () => {
    const a = await start();
    const b = await start({ reconnectMinMs: 2_500 });
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    try {
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [`baton-wake ${b.serverId}`]);
      await expect.poll(() => b.isListening, { timeout: 2_000, interval: 5 }).toBe(false);
      // A's wake cannot reach B now; B's wait still ends within about a second, not at 10 s.
      for (let i = 0; i < 2; i++) {
        const t = performance.now();
        const w = b.wait('barrier:missed', 10_000);
        a.notify('barrier:missed');
        await w;
        expect(elapsedSince(t)).toBeLessThan(1_300);
      }
      expect(b.isListening).toBe(false);
      await expect.poll(() => b.isListening, { timeout: 5_000, interval: 20 }).toBe(true);
    } finally {
      await admin.end();
    }
  });
});

describe.runIf(postgresUrl())('PgNotifier alone on its database', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('publishes nothing while no other server listens, publishes from the hello of one that starts, and stops again once it left', async () => {
    const a = await PgNotifier.start({ url: db.url, clock, peerCheckMs: 100 });
    try {
      await expect.poll(() => a.peerState, { timeout: 5_000, interval: 10 }).toBe('none');
      const published = a.stats.published;
      a.notify('barrier:alone');
      await a.flushNow();
      expect(a.stats.published).toBe(published);
      expect(a.stats.unpublished).toBe(1);

      // Long before A's next count could see it, B's hello makes A publish again.
      const b = await PgNotifier.start({ url: db.url, clock, peerCheckMs: 60_000 });
      try {
        await expect.poll(() => a.peerState, { timeout: 2_000, interval: 5 }).toBe('present');
        const t0 = performance.now();
        const onB = b.wait('barrier:heard', 10_000);
        a.notify('barrier:heard');
        await onB;
        expect(elapsedSince(t0)).toBeLessThan(1_000);
        expect(b.stats.received).toBe(1);
      } finally {
        await b.close();
      }
      await expect.poll(() => a.peerState, { timeout: 5_000, interval: 10 }).toBe('none');
    } finally {
      await a.close();
    }
  });
});

describe.runIf(postgresUrl())('two Baton servers on one PostgreSQL', () => {
  const adminToken = 'two-server-admin';
  let db: TestDatabase;
  let servers: { baton: Baton; store: SqlStore; notifier: PgNotifier }[] = [];

  const startServer = async () => {
    const store = (await openStore({ kind: 'postgres', url: db.url })) as SqlStore;
    const notifier = await PgNotifier.start({ url: db.url, clock });
    const baton = await createBaton({ store, clock, adminToken, notifier });
    const server = { baton, store, notifier };
    servers.push(server);
    return server;
  };
  const call = async (baton: Baton, method: 'GET' | 'POST', url: string, key: string, body?: object) => {
    const res = await baton.app.inject({ method, url, headers: { authorization: `Bearer ${key}`, 'idempotency-key': `two-${Math.random()}` }, ...(body ? { payload: body } : {}) });
    return { statusCode: res.statusCode, body: JSON.parse(res.body) };
  };

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    for (const s of servers) {
      await s.baton.drainAndClose();
      await s.notifier.close();
      await s.store.close();
    }
    servers = [];
    await db?.drop();
  });

  it('an arrive on server A releases a long poll parked on server B well before its 20 s', async () => {
    const a = await startServer();
    const b = await startServer();
    const org = await call(a.baton, 'POST', '/admin/v1/orgs', adminToken, { name: 'acme', plan: 'TEAM' });
    const space = await call(a.baton, 'POST', `/admin/v1/orgs/${org.body.id}/spaces`, adminToken, { name: 'main' });
    const key = (await call(a.baton, 'POST', `/admin/v1/orgs/${org.body.id}/keys`, adminToken, { name: 'test' })).body.secret as string;
    const base = `/v1/spaces/${space.body.id}`;

    const created = await call(a.baton, 'POST', `${base}/barriers`, key, { scopeId: '11111111-1111-4111-8111-111111111111', target: 1 });
    expect(created.statusCode).toBe(201);
    const id = created.body.id as string;

    const t0 = performance.now();
    const poll = call(b.baton, 'GET', `${base}/barriers/${id}?waitMs=20000`, key);
    await expect.poll(() => b.notifier.parked, { timeout: 5_000, interval: 5 }).toBeGreaterThan(0);
    const arrived = await call(a.baton, 'POST', `${base}/barriers/${id}/arrive`, key, { arrivalKey: 'w1' });
    expect(arrived.statusCode).toBe(200);
    const tArrive = performance.now();

    const released = await poll;
    const total = elapsedSince(t0);
    expect(released.statusCode).toBe(200);
    expect(released.body.state).toBe('RELEASED');
    expect(total).toBeLessThan(2_000);
    expect(elapsedSince(tArrive)).toBeLessThan(1_000);
    expect(b.notifier.stats.received).toBeGreaterThanOrEqual(1);
  });
  const tenant = async (on: Baton) => {
    const org = await call(on, 'POST', '/admin/v1/orgs', adminToken, { name: 'acme', plan: 'TEAM' });
    const space = await call(on, 'POST', `/admin/v1/orgs/${org.body.id}/spaces`, adminToken, { name: 'main' });
    const key = (await call(on, 'POST', `/admin/v1/orgs/${org.body.id}/keys`, adminToken, { name: 'test' })).body.secret as string;
    return { key, base: `/v1/spaces/${space.body.id}` };
  };
  const scopeId = '11111111-1111-4111-8111-111111111111';

  it('a key revoked on server A is refused on server B within a second, though B had it cached', async () => {
    const a = await startServer();
    const b = await startServer();
    const org = await call(a.baton, 'POST', '/admin/v1/orgs', adminToken, { name: 'acme', plan: 'TEAM' });
    const space = await call(a.baton, 'POST', `/admin/v1/orgs/${org.body.id}/spaces`, adminToken, { name: 'main' });
    const created = (await call(a.baton, 'POST', `/admin/v1/orgs/${org.body.id}/keys`, adminToken, { name: 'soon-revoked' })).body;
    const limits = () => call(b.baton, 'GET', `/v1/spaces/${space.body.id}/limits`, created.secret as string);
    // B holds the key in its cache once it has answered with it (the key's id is its secret's
    // prefix, host/secrets.ts); A's creates of org, space and key clear B's cache when their
    // notifications arrive, which may be after B's first answer, so B asks until it holds it.
    const cachedOnB = async (): Promise<string | undefined> => {
      expect((await limits()).statusCode).toBe(200);
      return b.baton.deps.credentials.get(created.id as string, space.body.id as string)?.key.id;
    };
    await expect.poll(cachedOnB, { timeout: 5_000, interval: 20 }).toBe(created.id);

    expect((await call(a.baton, 'POST', `/admin/v1/keys/${created.id}/revoke`, adminToken)).statusCode).toBe(200);
    const tRevoke = performance.now();
    await expect.poll(async () => (await limits()).statusCode, { timeout: 1_000, interval: 10 }).toBe(401);
    expect(elapsedSince(tRevoke)).toBeLessThan(1_000);
  });

  it('a send on server A wakes a recv long-polling on server B', async () => {
    const a = await startServer();
    const b = await startServer();
    const { key, base } = await tenant(a.baton);
    const box = (await call(a.baton, 'POST', `${base}/mailboxes`, key, { name: 'two-server-recv' })).body.id as string;
    const parkedBefore = b.notifier.parked;
    const poll = call(b.baton, 'POST', `${base}/mailboxes/${box}/recv`, key, { scopeId, holder: 'w', holderSession: 's', waitMs: 20_000 });
    await expect.poll(() => b.notifier.parked, { timeout: 5_000, interval: 5 }).toBeGreaterThan(parkedBefore);
    const tSend = performance.now();
    expect((await call(a.baton, 'POST', `${base}/mailboxes/${box}/messages`, key, { scopeId, payload: 'hello' })).statusCode).toBe(201);
    const got = await poll;
    expect(got.statusCode).toBe(200);
    expect(got.body.payload).toBe('hello');
    expect(elapsedSince(tSend)).toBeLessThan(1_000);
  });

  it('pool units released on server A wake an admit long-polling on server B for that pool', async () => {
    const a = await startServer();
    const b = await startServer();
    const { key, base } = await tenant(a.baton);
    const box = (await call(a.baton, 'POST', `${base}/mailboxes`, key, { name: 'two-server-admit' })).body.id as string;
    expect((await call(a.baton, 'POST', `${base}/pools`, key, { name: 'gpu', capacity: 1 })).statusCode).toBe(201);
    const needsGpu = { scopeId, mailboxId: box, requirements: { pools: [{ name: 'gpu', units: 1 }] } };
    expect((await call(a.baton, 'POST', `${base}/tasks`, key, { ...needsGpu, taskKey: 'first' })).statusCode).toBe(201);
    const second = await call(a.baton, 'POST', `${base}/tasks`, key, { ...needsGpu, taskKey: 'second' });
    const admit = (on: Baton, waitMs: number) => call(on, 'POST', `${base}/tasks/admit`, key, { scopeId, mailboxId: box, holder: 'w', holderSession: 's', waitMs });
    const first = await admit(a.baton, 0);
    expect(first.statusCode).toBe(200);
    // The second task waits for the pool: B's admit parks on the mailbox and on pool:<id>.
    const parkedBefore = b.notifier.parked;
    const poll = admit(b.baton, 20_000);
    await expect.poll(() => b.notifier.parked, { timeout: 5_000, interval: 5 }).toBeGreaterThanOrEqual(parkedBefore + 2);
    const tRelease = performance.now();
    expect((await call(a.baton, 'POST', `${base}/messages/${first.body.messageId}/complete`, key, { token: first.body.token })).statusCode).toBe(200);
    const woke = await poll;
    expect(woke.statusCode).toBe(200);
    expect(woke.body.taskId).toBe(second.body.taskId);
    expect(elapsedSince(tRelease)).toBeLessThan(1_000);
  });
});
