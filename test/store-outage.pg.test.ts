import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@baton-coordination/server/host/logger';
import { migrate } from '@baton-coordination/server/store/sql/migrate';
import { PgDriver } from '@baton-coordination/server/store/sql/pg-driver';
import { SqlStore } from '@baton-coordination/server/store/sql/sql-store';
import { createTestDatabase, postgresUrl, type TestDatabase } from './support/databases';
import { idem, startTestServer, type Reply, type TestServer } from './support/server';
import { TcpProxy } from './support/tcp-proxy';

/**
 * PostgreSQL out of reach, as a server on it sees it (docs/design/0004-error-codes.md): every call answers 503
 * UNAVAILABLE with Retry-After, the log says so once when it starts and once when it ends, and
 * /readyz says why. The database sits behind a TCP proxy the test takes down, so the PostgreSQL
 * other tests share is never stopped. Before: 500 INTERNAL with no Retry-After, and a stack
 * trace in the log for every request.
 */

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

const scopeId = '11111111-1111-4111-8111-111111111111';

describe.runIf(postgresUrl())('a server whose PostgreSQL cannot be reached', () => {
  const chunks: string[] = [];
  const logger = createLogger({ level: 'info', format: 'json', destination: { write: (chunk: string) => void chunks.push(chunk) } });
  const logLines = (): LogLine[] => chunks.join('').split('\n').filter(Boolean).map((line) => JSON.parse(line) as LogLine);
  let db: TestDatabase;
  let proxy: TcpProxy;
  let store: SqlStore;
  let server: TestServer;
  let box: string;
  /** A connection of the test's own, straight to the database: it sees the locks the server's transactions hold. */
  let direct: pg.Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    const url = new URL(db.url);
    proxy = await TcpProxy.start({ host: url.hostname, port: Number(url.port || 5432) });
    const proxied = new URL(db.url);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.port);
    const driver = new PgDriver(proxied.toString(), { onConnectionError: () => undefined });
    await migrate(driver);
    store = new SqlStore(driver);
    server = await startTestServer(store, { logger });
    box = (await server.api('POST', '/mailboxes', { body: { name: 'outage' }, idem: idem() })).body.id;
    direct = new pg.Client({ connectionString: db.url });
    await direct.connect();
  });
  afterAll(async () => {
    await direct?.end();
    await server?.close();
    await proxy?.up();
    await store?.close();
    await proxy?.close();
    await db?.drop();
  });

  const send = (key: string): Promise<Reply> => server.api('POST', `/mailboxes/${box}/messages`, { body: { scopeId, payload: { key } }, idem: key });
  const expectUnavailable = (reply: Reply): void => {
    expect(reply.statusCode, JSON.stringify(reply.body)).toBe(503);
    expect(reply.body.error).toMatchObject({ code: 'UNAVAILABLE', requestId: reply.headers['x-request-id'] });
    expect(Number(reply.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  };
  const advisoryLocks = async (): Promise<number> =>
    Number((await direct.query("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())")).rows[0].n);

  it('answers 503 UNAVAILABLE with Retry-After while it is down, logs it once, and serves the same Idempotency-Key once it is back', async () => {
    const before = logLines().length;
    await proxy.down();
    const replies = [
      await send('while-down'),
      await send('while-down'),
      await server.api('GET', '/mailboxes'),
      await server.api('GET', `/mailboxes/${box}/messages`),
      await server.admin('POST', `/orgs/${server.orgId}/spaces`, { name: 'during-outage' }),
    ];
    for (const reply of replies) expectUnavailable(reply);
    const ready = await server.inject('GET', '/readyz', {});
    expect(ready.statusCode).toBe(503);
    expect(ready.body).toMatchObject({ status: 'store unavailable', reason: 'connection refused (ECONNREFUSED)', since: expect.any(String) });

    await proxy.up();
    const served = await send('while-down');
    expect(served.statusCode, JSON.stringify(served.body)).toBe(201);
    expect((await server.inject('GET', '/readyz', {})).statusCode).toBe(200);
    expect((await send('while-down')).headers['idempotent-replayed']).toBe('true');

    const lines = logLines().slice(before);
    // The first failure names the outage: a pooled connection reset, or a connect refused.
    expect(lines.filter((l) => l.msg.startsWith('store unreachable'))).toEqual([expect.objectContaining({ level: 40, reason: expect.stringMatching(/ECONNRESET|ECONNREFUSED|terminated/) })]);
    expect(lines.filter((l) => l.msg === 'store answers again')).toEqual([expect.objectContaining({ level: 30, refused: expect.any(Number) })]);
    // No stack, no "unexpected error", no request line at error level: one line per request, at info.
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(chunks.join('')).not.toContain('"stack"');
    expect(lines.filter((l) => l.msg === 'request' && l.statusCode === 503 && l.route !== '/readyz')).toHaveLength(replies.length);
  });

  it('answers 503 when the connection is lost mid-transaction, and leaves no Idempotency-Key in flight', async () => {
    // A call first, so the key is in the credential cache and the next call goes straight to its transaction.
    expect((await server.api('GET', '/mailboxes')).statusCode).toBe(200);
    proxy.holdReplies();
    const pending = send('cut-mid-flight');
    // The transaction has begun and holds the key's lock; its replies are held back.
    await expect.poll(advisoryLocks, { timeout: 5_000, interval: 20 }).toBeGreaterThan(0);
    await proxy.down();
    expectUnavailable(await pending);
    await proxy.up();
    // PostgreSQL ended the lost session, and its lock with it.
    await expect.poll(advisoryLocks, { timeout: 5_000, interval: 20 }).toBe(0);
    const retried = await send('cut-mid-flight');
    expect(retried.statusCode, JSON.stringify(retried.body)).toBe(201);
    const sent = await server.api('GET', `/mailboxes/${box}/messages?limit=500`);
    expect(sent.body.items.filter((m: { payload: { key: string } }) => m.payload.key === 'cut-mid-flight')).toHaveLength(1);
  });

  it('answers 503 when PostgreSQL terminates the connections (57P01), and serves the next call', async () => {
    proxy.holdReplies();
    const pending = send('terminated');
    await expect.poll(advisoryLocks, { timeout: 5_000, interval: 20 }).toBeGreaterThan(0);
    await direct.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
    // The held replies, then PostgreSQL's FATAL 57P01 and the end of the connection, reach the server.
    await proxy.up();
    expectUnavailable(await pending);
    const retried = await send('terminated');
    expect(retried.statusCode, JSON.stringify(retried.body)).toBe(201);
  });
});
