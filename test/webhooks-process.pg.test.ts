import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, postgresUrl, type TestDatabase } from './support/databases';
import { WebhookReceiver, type Receipt } from './support/webhook-receiver';
import { createProcessTenant, spaceCall, type ProcessTenant } from './support/process-tenant';
import { killServerProcess, startServerProcess, stopAllServerProcesses, stopServerProcess, type ServerProcess } from './support/server-process';

/**
 * Webhook delivery across real server processes (`node server/dist/main.js`, as `npm start`
 * runs it; npm test builds first) sharing one PostgreSQL database, to a real receiver on
 * loopback: an attempt in flight when its server is killed -9 is sent again by another server
 * once the dead one's lease expires (at least once, never skipped), and two live servers
 * dispatching one destination send each event once, in journal order (docs/api.md, "Webhooks").
 */
const adminToken = 'webhooks-process-admin';
const secretKey = Buffer.alloc(32, 5).toString('base64');
/** Per attempt; a dispatcher's lease on a destination is then 2 * 1 s + 5 s = 7 s. */
const webhookTimeoutMs = 1_000;

/** The environment every server of this file runs with, on `databaseUrl`. */
const serverEnv = (databaseUrl: string): Record<string, string> => ({
  DATABASE_URL: databaseUrl,
  PORT: '0',
  HOST: '127.0.0.1',
  BATON_ADMIN_TOKEN: adminToken,
  BATON_BOOTSTRAP: 'off',
  BATON_SECRET_KEY: secretKey,
  BATON_WEBHOOK_ALLOW_PRIVATE: '1',
  BATON_WEBHOOK_TIMEOUT_MS: String(webhookTimeoutMs),
  LOG_LEVEL: 'info',
  LOG_FORMAT: 'json',
});
const start = (databaseUrl: string): Promise<ServerProcess> => startServerProcess(serverEnv(databaseUrl));

type Tenant = ProcessTenant;
const tenant = (address: string, name: string): Promise<Tenant> => createProcessTenant(address, adminToken, name, 'TEAM');
const api = spaceCall;

async function createDestination(address: string, t: Tenant, url: string): Promise<{ id: string; secret: string }> {
  const res = await api(address, t, 'POST', '/destinations', { url, eventTypes: ['pool.*'] });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { id: res.body.id, secret: res.body.signingSecret };
}

async function createPool(address: string, t: Tenant, name: string): Promise<void> {
  const res = await api(address, t, 'POST', '/pools', { name, capacity: 1 });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
}

/** Every attempt of a destination, most recent first (one page: the tests make fewer than 500). */
async function deliveries(address: string, t: Tenant, destinationId: string): Promise<{ eventId: string; status: string }[]> {
  const res = await api(address, t, 'GET', `/deliveries?destinationId=${destinationId}&limit=500`);
  expect(res.status).toBe(200);
  expect(res.body.nextCursor).toBeNull();
  return res.body.items;
}

/** Polls `done` every 100 ms: true once it holds, false if it still does not after `timeoutMs`. */
async function eventually(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

/** The pool name of a webhook body, checking webhook-id is its eventId and its type pool.created. */
function parsed(r: Receipt): { eventId: string; name: string } {
  const body = JSON.parse(r.body) as { eventId: string; type: string; data: { name: string } };
  expect(body.type).toBe('pool.created');
  expect(r.headers['webhook-id']).toBe(body.eventId);
  return { eventId: body.eventId, name: body.data.name };
}

function expectVerified(r: Receipt, secret: string): void {
  expect(() => new Webhook(secret).verify(r.body, r.headers)).not.toThrow();
}

/** Names in the order of each event's first answered receipt. */
function firstSuccessNames(receipts: Receipt[]): string[] {
  const seen = new Set<string>();
  const names: string[] = [];
  for (const r of receipts) {
    if (r.answered !== 204) continue;
    const { eventId, name } = parsed(r);
    if (seen.has(eventId)) continue;
    seen.add(eventId);
    names.push(name);
  }
  return names;
}

describe.runIf(postgresUrl())('webhook delivery across server processes on one PostgreSQL database', () => {
  let db: TestDatabase;
  const receiver = new WebhookReceiver();

  beforeAll(async () => {
    db = await createTestDatabase();
    await receiver.start();
  });
  afterAll(async () => {
    await stopAllServerProcesses();
    await receiver.stop();
    await db?.drop();
  });

  it('an event in flight when its server is killed with SIGKILL is delivered after a restart', async () => {
    const path = '/killed';
    const names = Array.from({ length: 5 }, (_v, i) => `killed-${i}`);
    // The first pool's event is held: its attempt stays in flight until the server dies.
    receiver.hold = (r) => r.path === path && receiver.held.length === 0 && (JSON.parse(r.body) as { data?: { name?: string } }).data?.name === names[0];
    const a = await start(db.url);
    let b: ServerProcess | undefined;
    try {
      const t = await tenant(a.address, 'killed');
      const destination = await createDestination(a.address, t, receiver.url(path));
      for (const name of names) await createPool(a.address, t, name);
      await receiver.whenHeld(10_000);
      const heldAt = Date.now();
      await killServerProcess(a.child);
      // Killed before the attempt's own timeout could end it (and record a failure).
      expect(Date.now() - heldAt).toBeLessThan(webhookTimeoutMs);
      receiver.releaseHeld();
      const inFlight = parsed(receiver.held[0]!.receipt).eventId;

      // A new process on the same database: it claims the destination once A's lease (7 s) expires.
      b = await start(db.url);
      const answeredNames = () => new Set(receiver.at(path).filter((r) => r.answered === 204).map((r) => parsed(r).name));
      const allAnswered = () => names.every((n) => answeredNames().has(n));
      if (!(await eventually(allAnswered, 30_000))) {
        // What the destination's row, its view and server B say, for the failure message.
        const view = await api(b.address, t, 'GET', `/destinations/${destination.id}`);
        const attempts = await deliveries(b.address, t, destination.id);
        const client = new pg.Client({ connectionString: db.url });
        await client.connect();
        const rows = (await client.query('SELECT id, state, cursor, next_attempt_at, lease_expires_at, lease_token, now() AS db_now FROM webhook_destinations')).rows;
        await client.end();
        throw new Error(
          `not every event was answered within 30 s: answered [${[...answeredNames()].join(', ')}]; ${receiver.at(path).length} received\n` +
            `destination: ${JSON.stringify(view.body)}\nrow: ${JSON.stringify(rows)}\nattempts: ${JSON.stringify(attempts)}\nserver B:\n${b.output()}`,
        );
      }

      const receipts = receiver.at(path);
      for (const r of receipts) expectVerified(r, destination.secret);
      expect(firstSuccessNames(receipts)).toEqual(names);
      // At least once: only the event in flight at the kill may arrive twice.
      const counts = new Map<string, number>();
      for (const r of receipts) counts.set(parsed(r).eventId, (counts.get(parsed(r).eventId) ?? 0) + 1);
      for (const [eventId, count] of counts) if (eventId !== inFlight) expect(count, `event ${eventId}`).toBe(1);
      expect(counts.get(inFlight)).toBe(2);
      expect(counts.size).toBe(names.length);

      // The audit on B: one SUCCEEDED attempt per event, and no failure (A died mid-attempt, recording none).
      const attempts = await deliveries(b.address, t, destination.id);
      const succeeded = attempts.filter((x) => x.status === 'SUCCEEDED').map((x) => x.eventId);
      expect(new Set(succeeded)).toEqual(new Set(counts.keys()));
      expect(succeeded).toHaveLength(names.length);
      expect(attempts.filter((x) => x.status !== 'SUCCEEDED')).toEqual([]);
    } finally {
      receiver.hold = undefined;
      receiver.releaseHeld();
      await stopServerProcess(a.child);
      if (b) await stopServerProcess(b.child);
    }
  }, 120_000);

  it('two servers on one database dispatch one destination, each event once and in order', async () => {
    const path = '/shared';
    const names = Array.from({ length: 100 }, (_v, i) => `shared-${i}`);
    const a = await start(db.url);
    let b: ServerProcess | undefined;
    try {
      b = await start(db.url);
      const t = await tenant(a.address, 'shared');
      const destination = await createDestination(a.address, t, receiver.url(path));
      for (const [i, name] of names.entries()) await createPool(i % 2 === 0 ? a.address : b.address, t, name);
      const arrived = await eventually(() => receiver.at(path).length >= names.length, 60_000);
      expect(arrived, `${receiver.at(path).length} of ${names.length} received\nserver A:\n${a.output()}\nserver B:\n${b.output()}`).toBe(true);
      // A moment more, for any duplicate still on its way.
      await new Promise((r) => setTimeout(r, 2_000));

      const receipts = receiver.at(path);
      for (const r of receipts) expectVerified(r, destination.secret);
      expect(receipts.every((r) => r.answered === 204)).toBe(true);
      expect(receipts.map((r) => parsed(r).name)).toEqual(names);
      const ids = receipts.map((r) => r.headers['webhook-id'] as string);
      expect(new Set(ids).size).toBe(ids.length);
      // Journal order: eventIds ascend.
      for (let i = 1; i < ids.length; i++) expect(BigInt(ids[i]!) > BigInt(ids[i - 1]!), `${ids[i - 1]} then ${ids[i]}`).toBe(true);

      const attempts = await deliveries(a.address, t, destination.id);
      expect(attempts.filter((x) => x.status !== 'SUCCEEDED')).toEqual([]);
      expect(attempts.map((x) => x.eventId).reverse()).toEqual(ids);
    } finally {
      await stopServerProcess(a.child);
      if (b) await stopServerProcess(b.child);
    }
  }, 120_000);
});
