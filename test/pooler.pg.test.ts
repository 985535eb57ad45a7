import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SystemClock, type Store } from '@baton/core';
import { PgNotifier } from '@baton-coordination/server/notify/pg-notifier';
import { openStore } from '@baton-coordination/server/store/open-store';
import type { PgDriver, PoolMode } from '@baton-coordination/server/store/sql/pg-driver';
import { probeSessions } from '@baton-coordination/server/store/sql/pooler-check';
import type { SqlStore } from '@baton-coordination/server/store/sql/sql-store';
import { createTestDatabase, postgresUrl, type TestDatabase } from './support/databases';
import { idem, startTestServer, type TestServer } from './support/server';
import { PgBouncer } from '@baton-coordination/server/testing/pgbouncer';
import { createProcessTenant, spaceCall, type ProcessTenant } from './support/process-tenant';
import { killServerProcess, startServerProcess, stopAllServerProcesses, stopServerProcess, type ServerProcess } from './support/server-process';

/**
 * Baton behind a real PgBouncer (issue 33), as `npm start` runs it (compiled server processes;
 * npm test builds first), with PgBouncer's defaults: two servers through it in session mode and
 * in transaction mode share one database; a task submitted on one is admitted and completed on
 * the other, a long poll parked on one is woken by a commit on the other, and after one is
 * killed with SIGKILL the other carries on. Settings that would fail later are refused at start
 * with a message naming the fix.
 */
const adminToken = 'pooler-admin';

interface Tenant extends ProcessTenant {
  mailboxId: string;
  scopeId: string;
}

const serverEnv = (extra: Record<string, string>): Record<string, string> => ({
  PORT: '0',
  HOST: '127.0.0.1',
  BATON_ADMIN_TOKEN: adminToken,
  BATON_BOOTSTRAP: 'off',
  LOG_LEVEL: 'info',
  LOG_FORMAT: 'json',
  ...extra,
});

const api = spaceCall;

async function tenant(address: string, name: string): Promise<Tenant> {
  const t: Tenant = { ...(await createProcessTenant(address, adminToken, name, 'ENTERPRISE')), mailboxId: '', scopeId: randomUUID() };
  const mailbox = await api(address, t, 'POST', '/mailboxes', { name: 'work', backlogLimit: 10_000 });
  expect(mailbox.status, JSON.stringify(mailbox.body)).toBe(201);
  return { ...t, mailboxId: mailbox.body.id };
}

const submit = (address: string, t: Tenant, taskKey: string) => api(address, t, 'POST', '/tasks', { scopeId: t.scopeId, mailboxId: t.mailboxId, taskKey, input: { taskKey } });
const admit = (address: string, t: Tenant, waitMs = 0) =>
  api(address, t, 'POST', '/tasks/admit', { scopeId: t.scopeId, mailboxId: t.mailboxId, holder: 'w', holderSession: 's', leaseSeconds: 60, waitMs });
const complete = (address: string, t: Tenant, delivery: { messageId: string; token: string }) =>
  api(address, t, 'POST', `/messages/${delivery.messageId}/complete`, { token: delivery.token, result: { payload: { ok: true } } });

/** Runs `count` tasks: submitted on `from`, admitted and completed on `to`. Answers the task ids. */
async function runTasks(from: string, to: string, t: Tenant, count: number, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const submitted = await submit(from, t, `${prefix}-${i}`);
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(201);
    ids.push(submitted.body.taskId);
  }
  for (let i = 0; i < count; i++) {
    const admitted = await admit(to, t);
    expect(admitted.status, JSON.stringify(admitted.body)).toBe(200);
    const completed = await complete(to, t, admitted.body);
    expect(completed.status, JSON.stringify(completed.body)).toBe(200);
  }
  return ids;
}

async function expectSucceeded(address: string, t: Tenant, taskIds: string[]): Promise<void> {
  for (const id of taskIds) {
    const task = await api(address, t, 'GET', `/tasks/${id}`);
    expect(task.status).toBe(200);
    expect(task.body.state).toBe('SUCCEEDED');
  }
}

/** The start fails: exit code 2 and the message on stderr. */
async function refusedStart(env: Record<string, string>): Promise<string> {
  const error = await startServerProcess(serverEnv(env)).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  expect(error, 'the server started').toBeDefined();
  expect(error!.message).toMatch(/^server exited 2:/);
  return error!.message;
}

describe.runIf(postgresUrl())('Baton behind PgBouncer', () => {
  let db: TestDatabase;
  let bouncer: PgBouncer;

  beforeAll(async () => {
    db = await createTestDatabase();
    bouncer = await PgBouncer.start(db.url);
    console.log(`PgBouncer ${bouncer.version} on port ${bouncer.port}`);
  }, 30_000);
  afterAll(async () => {
    await stopAllServerProcesses();
    await bouncer?.stop();
    await db?.drop();
  });

  it('the start-up probe tells sessions of their own (direct, session mode) from shared ones (transaction mode)', async () => {
    expect((await probeSessions(db.url)).sessions).toBe('own');
    expect((await probeSessions(bouncer.url('session'))).sessions).toBe('own');
    const shared = await probeSessions(bouncer.url('transaction'));
    expect(shared.sessions, shared.detail).toBe('shared');
    expect(shared.database).toBe(new URL(db.url).pathname.slice(1));
  });

  const modes = [
    { mode: 'session', env: (): Record<string, string> => ({ DATABASE_URL: bouncer.url('session') }) },
    { mode: 'transaction', env: (): Record<string, string> => ({ DATABASE_URL: bouncer.url('transaction'), BATON_DATABASE_POOL_MODE: 'transaction', BATON_NOTIFY_DATABASE_URL: db.url }) },
  ] as const;

  describe.each(modes)('in $mode mode', ({ mode, env }) => {
    it('two servers share the work, wake each other\'s long polls, and one carries on after the other is killed with SIGKILL', async () => {
      const a = await startServerProcess(serverEnv(env()));
      let b: ServerProcess | undefined;
      try {
        b = await startServerProcess(serverEnv(env()));
        const t = await tenant(a.address, `pooler-${mode}`);

        // Submitted on A, admitted and completed on B, read back on A.
        const ids = await runTasks(a.address, b.address, t, 30, 'across');
        await expectSucceeded(a.address, t, ids);

        // A long poll parked on B wakes on A's commit, well before its 20 s wait ends.
        const parked = admit(b.address, t, 20_000);
        await new Promise((r) => setTimeout(r, 500));
        const submittedAt = performance.now();
        expect((await submit(a.address, t, 'woken')).status).toBe(201);
        const woken = await parked;
        const wokenAfterMs = performance.now() - submittedAt;
        expect(woken.status, JSON.stringify(woken.body)).toBe(200);
        expect(wokenAfterMs).toBeLessThan(3_000);
        // And the other way: a task's long poll on A ends when B completes it.
        const submitted = await submit(b.address, t, 'watched');
        const watched = api(a.address, t, 'GET', `/tasks/${submitted.body.taskId}?waitMs=20000`);
        await new Promise((r) => setTimeout(r, 500));
        const admittedWatched = await admit(b.address, t);
        expect(admittedWatched.body.taskId).toBe(submitted.body.taskId);
        expect((await complete(b.address, t, admittedWatched.body)).status).toBe(200);
        const completedAt = performance.now();
        const view = await watched;
        expect(view.body.state).toBe('SUCCEEDED');
        expect(performance.now() - completedAt).toBeLessThan(3_000);
        expect((await complete(b.address, t, woken.body)).status).toBe(200);

        // A dies mid-life; B carries on alone through the same pooler.
        await killServerProcess(a.child);
        const after = await runTasks(b.address, b.address, t, 10, 'after-kill');
        await expectSucceeded(b.address, t, after);

        for (const server of [a, b]) expect(server.output()).not.toMatch(/prepared statement|"statusCode":5\d\d|unsupported startup parameter/);
        console.log(`${mode} mode: 42 tasks across two servers, cross-server wake after ${wokenAfterMs.toFixed(0)} ms`);
        expect(await stopServerProcess(b.child)).toBe(0);
      } finally {
        await stopServerProcess(a.child);
        if (b) await stopServerProcess(b.child);
      }
    }, 120_000);
  });

  it('a notifier whose LISTEN went through a transaction pooler after start says so, naming BATON_NOTIFY_DATABASE_URL; through session mode it hears itself', async () => {
    const heard = async (url: string): Promise<string[]> => {
      const errors: string[] = [];
      const logger = { info: () => undefined, warn: () => undefined, error: (_obj: object, msg: string) => void errors.push(msg) };
      const notifier = await PgNotifier.start({ url, clock: new SystemClock(), logger });
      try {
        await new Promise((r) => setTimeout(r, 5_500));
        return errors;
      } finally {
        await notifier.close();
      }
    };
    const [deaf, hearing] = await Promise.all([heard(bouncer.url('transaction')), heard(bouncer.url('session'))]);
    expect(deaf).toEqual([expect.stringMatching(/LISTEN does not hear its own notification.*Set BATON_NOTIFY_DATABASE_URL/)]);
    expect(hearing).toEqual([]);
  }, 30_000);

  it('the hot requests keep their round trips through the pooler in both modes (round-trips.pg.test.ts\'s budget of 2)', async () => {
    const connections: [string, (own: TestDatabase, pooler: PgBouncer) => string, PoolMode][] = [
      ['direct', (own) => own.url, 'session'],
      ['PgBouncer session mode', (_own, pooler) => pooler.url('session'), 'session'],
      ['PgBouncer transaction mode', (_own, pooler) => pooler.url('transaction'), 'transaction'],
    ];
    const lines: string[] = [];
    for (const [name, url, poolMode] of connections) {
      // A database and a pooler of each connection's own: the test server makes the same tenant in each.
      const own = await createTestDatabase();
      const pooler = await PgBouncer.start(own.url).catch(async (error: unknown) => {
        await own.drop();
        throw error;
      });
      let store: Store | undefined;
      let server: TestServer | undefined;
      try {
        store = await openStore({ kind: 'postgres', url: url(own, pooler), poolMode });
        server = await startTestServer(store);
        const call = server.api;
        const driver = (store as SqlStore).driver as PgDriver;
        const mailboxId = (await call('POST', '/mailboxes', { body: { name: 'rt', backlogLimit: 10_000 }, idem: idem() })).body.id as string;
        const scopeId = randomUUID();
        const measured = async (request: () => Promise<{ statusCode: number; body: any }>, status: number): Promise<{ roundTrips: number; ms: number; body: any }> => {
          const before = driver.meter.snapshot().roundTrips;
          const t0 = performance.now();
          const reply = await request();
          const ms = performance.now() - t0;
          expect(reply.statusCode, JSON.stringify(reply.body)).toBe(status);
          return { roundTrips: driver.meter.snapshot().roundTrips - before, ms, body: reply.body };
        };
        const most = { submit: 0, admit: 0, complete: 0 };
        const ms = { submit: [] as number[], admit: [] as number[], complete: [] as number[] };
        for (let i = 0; i < 40; i++) {
          const submitted = await measured(() => call('POST', '/tasks', { body: { scopeId, mailboxId, taskKey: `rt-${i}`, input: { i } }, idem: idem() }), 201);
          const admitted = await measured(() => call('POST', '/tasks/admit', { body: { scopeId, mailboxId, holder: 'w', holderSession: 's', leaseSeconds: 60 }, idem: idem() }), 200);
          const completed = await measured(
            () => call('POST', `/messages/${admitted.body.messageId}/complete`, { body: { token: admitted.body.token, result: { ok: true } }, idem: idem() }),
            200,
          );
          // The first cycle warms the key cache and the statements up, as round-trips.pg.test.ts's warm-up turn does.
          if (i === 0) continue;
          for (const [kind, m] of [['submit', submitted], ['admit', admitted], ['complete', completed]] as const) {
            most[kind] = Math.max(most[kind], m.roundTrips);
            ms[kind].push(m.ms);
          }
        }
        for (const kind of ['submit', 'admit', 'complete'] as const) expect(most[kind], `${name}: ${kind}`).toBeLessThanOrEqual(2);
        const median = (xs: number[]): string => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!.toFixed(2);
        lines.push(`  ${name}: submit ${most.submit} round trips (median ${median(ms.submit)} ms), admit ${most.admit} (${median(ms.admit)} ms), complete ${most.complete} (${median(ms.complete)} ms)`);
      } finally {
        await server?.close();
        await store?.close();
        await pooler.stop();
        await own.drop();
      }
    }
    console.log(`round trips per request, most of 39, and the request's median time in process:\n${lines.join('\n')}`);
  }, 60_000);

  it('refuses at start what would fail later, naming the fix', async () => {
    // Prepared statements through a transaction pooler.
    expect(await refusedStart({ DATABASE_URL: bouncer.url('transaction') })).toContain('set BATON_DATABASE_POOL_MODE=transaction');
    // Transaction mode with LISTEN on the store's URL.
    expect(await refusedStart({ DATABASE_URL: bouncer.url('transaction'), BATON_DATABASE_POOL_MODE: 'transaction' })).toContain('needs BATON_NOTIFY_DATABASE_URL');
    // LISTEN through a transaction pooler.
    expect(await refusedStart({ DATABASE_URL: bouncer.url('transaction'), BATON_DATABASE_POOL_MODE: 'transaction', BATON_NOTIFY_DATABASE_URL: bouncer.url('transaction') })).toContain(
      'BATON_NOTIFY_DATABASE_URL goes through a transaction pooler',
    );
    // The notifier on another database than the store.
    const postgres = new URL(db.url);
    postgres.pathname = '/postgres';
    expect(await refusedStart({ DATABASE_URL: bouncer.url('session'), BATON_NOTIFY_DATABASE_URL: postgres.toString() })).toMatch(/BATON_NOTIFY_DATABASE_URL reaches database postgres .* but DATABASE_URL reaches/);
  }, 60_000);
});
