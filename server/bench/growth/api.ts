/**
 * The growth bench's server and client: one Baton server on a loopback port over a PostgreSQL
 * store, and a one-connection HTTP client that sends one request at a time (the bench measures
 * what one request costs, not throughput).
 */
import { randomBytes } from 'node:crypto';
import { SystemClock } from '@baton/core';
import { Pool } from 'undici';
import { createBaton } from '../../src/host/baton';
import { PgNotifier } from '../../src/notify/pg-notifier';
import { openStore } from '../../src/store/open-store';
import { BenchFailure } from '../harness';

export interface Reply {
  status: number;
  body: any;
}

export class Client {
  private readonly pool: Pool;

  constructor(
    baseUrl: string,
    private readonly prefix: string,
    private readonly auth: string,
  ) {
    this.pool = new Pool(baseUrl, { connections: 1, pipelining: 1, headersTimeout: 60_000, bodyTimeout: 60_000 });
  }

  async request(method: 'GET' | 'POST' | 'PUT', path: string, expected: number[], body?: unknown, idempotencyKey?: string): Promise<Reply> {
    const headers: Record<string, string> = { authorization: this.auth };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
    const res = await this.pool.request({ method, path: this.prefix + path, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await res.body.text();
    if (!expected.includes(res.statusCode)) throw new BenchFailure(`${method} ${path}: expected ${expected.join('/')}, got ${res.statusCode} ${text.slice(0, 400)}`);
    return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
  }

  post(path: string, expected: number[], body: unknown, idempotencyKey?: string): Promise<Reply> {
    return this.request('POST', path, expected, body, idempotencyKey);
  }

  get(path: string, expected: number[] = [200]): Promise<Reply> {
    return this.request('GET', path, expected);
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/** What the admin API made for the run: a space, a key, and the tenant's client. */
export interface Tenant {
  spaceId: string;
  client: Client;
}

export interface RunningServer {
  tenant: Tenant;
  close(): Promise<void>;
}

/** Credentials survive a server restart on the same database: they live in it. */
export interface Credentials {
  spaceId: string;
  key: string;
  adminToken: string;
}

/**
 * A server on `url`, as `npm start` runs with DATABASE_URL (the PgNotifier wakes long polls), but
 * without the background loops: sweeps, limits sync and the census would add statements of their
 * own to the pg_stat_statements deltas each request is measured by. No request measured here
 * depends on them (leases are 120 s, nothing long-polls).
 */
export async function startServer(url: string, given?: Credentials): Promise<RunningServer & { credentials: Credentials }> {
  const store = await openStore({ kind: 'postgres', url });
  const clock = new SystemClock();
  const notifier = await PgNotifier.start({ url, clock });
  const adminToken = given?.adminToken ?? randomBytes(24).toString('hex');
  const baton = await createBaton({ store, clock, adminToken, bootstrap: false, notifier });
  const baseUrl = await baton.app.listen({ host: '127.0.0.1', port: 0 });
  const clients: Client[] = [];
  const close = async () => {
    for (const c of clients) await c.close();
    await baton.drainAndClose();
    await notifier.close();
    await store.close();
  };
  try {
    let credentials = given;
    if (!credentials) {
      const admin = new Client(baseUrl, '/admin/v1', `Bearer ${adminToken}`);
      clients.push(admin);
      const noCaps = { operationsPerMonth: null, agentsAtOnce: null, requestsPerMinute: null, activeRuns: null, activeTasks: null };
      const org = (await admin.post('/orgs', [201], { name: 'growth', plan: 'ENTERPRISE', limits: noCaps })).body;
      const space = (await admin.post(`/orgs/${org.id}/spaces`, [201], { name: 'growth' })).body;
      const key = (await admin.post(`/orgs/${org.id}/keys`, [201], { name: 'growth' })).body.secret as string;
      credentials = { spaceId: space.id as string, key, adminToken };
    }
    const client = new Client(baseUrl, `/v1/spaces/${credentials.spaceId}`, `Bearer ${credentials.key}`);
    clients.push(client);
    return { tenant: { spaceId: credentials.spaceId, client }, credentials, close };
  } catch (error) {
    await close();
    throw error;
  }
}
