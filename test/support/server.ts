import { ManualClock, SeededRandom, type Clock, type Store } from '@baton/core';
import type { LightMyRequestResponse } from 'fastify';
import type { Logger } from 'pino';
import { createBaton, type Baton, type BatonOptions } from '@baton-coordination/server/host/baton';
import type { StoreTarget } from './databases';

export const adminToken = 'test-admin-token';
/** 2026-01-01T00:00:00.000Z: tests run on a manual clock from a fixed start. */
export const startMs = Date.UTC(2026, 0, 1);

export interface Reply {
  statusCode: number;
  headers: LightMyRequestResponse['headers'];
  body: any;
}

export interface CallOptions {
  body?: unknown;
  key?: string | null;
  idem?: string;
  headers?: Record<string, string>;
}

export interface TestServer {
  baton: Baton;
  clock: ManualClock;
  orgId: string;
  spaceId: string;
  /** A key with all four permissions in `spaceId`. */
  key: string;
  admin(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<Reply>;
  /** A call to /v1/spaces/{spaceId}{path} with the default key unless `key` says otherwise. */
  api(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, options?: CallOptions): Promise<Reply>;
  /** Creates a key in this organization and returns its secret. */
  newKey(body?: { permissions?: string[]; spaceIds?: string[] }): Promise<string>;
  inject(method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<Reply>;
  close(): Promise<void>;
}

let idemCounter = 0;
/** A fresh Idempotency-Key for calls that need one but do not test idempotency. */
export const idem = (): string => `test-${process.pid}-${++idemCounter}`;

export async function startTestServer(
  store: Store,
  options: { clock?: Clock; seed?: number; adminToken?: string | null; logger?: Logger } & Pick<BatonOptions, 'metricsToken' | 'metricsCensus' | 'webhooks'> = {},
): Promise<TestServer> {
  const clock = options.clock ?? new ManualClock(startMs);
  const token = options.adminToken === undefined ? adminToken : options.adminToken ?? undefined;
  const baton = await createBaton({
    store, clock, random: new SeededRandom(options.seed ?? 1), adminToken: token, logger: options.logger, metricsToken: options.metricsToken, metricsCensus: options.metricsCensus, webhooks: options.webhooks,
  });
  const inject = async (method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<Reply> => {
    const res = await baton.app.inject({ method: method as 'GET', url, headers, ...(body === undefined ? {} : { payload: body as object }) });
    return { statusCode: res.statusCode, headers: res.headers, body: res.body ? JSON.parse(res.body) : undefined };
  };
  const admin = (method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown) =>
    inject(method, `/admin/v1${path}`, { authorization: `Bearer ${adminToken}` }, body);
  if (!token) {
    return { baton, clock: clock as ManualClock, orgId: '', spaceId: '', key: '', admin, inject, newKey: async () => '', api: async () => { throw new Error('no admin token: no tenant'); }, close: () => baton.drainAndClose() };
  }

  const org = await admin('POST', '/orgs', { name: 'acme', plan: 'TEAM' });
  const space = await admin('POST', `/orgs/${org.body.id}/spaces`, { name: 'main' });
  const newKey = async (body: { permissions?: string[]; spaceIds?: string[] } = {}): Promise<string> => {
    const created = await admin('POST', `/orgs/${org.body.id}/keys`, { name: 'test', ...body });
    if (created.statusCode !== 201) throw new Error(`key create failed: ${JSON.stringify(created.body)}`);
    return created.body.secret as string;
  };
  const key = await newKey();
  return {
    baton,
    clock: clock as ManualClock,
    orgId: org.body.id,
    spaceId: space.body.id,
    key,
    admin,
    newKey,
    inject,
    api: (method, path, opts = {}) => {
      const headers: Record<string, string> = { ...opts.headers };
      const k = opts.key === undefined ? key : opts.key;
      if (k !== null) headers.authorization = `Bearer ${k}`;
      if (opts.idem !== undefined) headers['idempotency-key'] = opts.idem;
      return inject(method, `/v1/spaces/${space.body.id}${path}`, headers, opts.body);
    },
    close: () => baton.drainAndClose(),
  };
}

/** Opens a fresh store of `target` and a test server on it; `close` shuts both. */
export async function openTestServer(
  target: StoreTarget,
  options: Parameters<typeof startTestServer>[1] = {},
): Promise<{ server: TestServer; store: Store; close(): Promise<void> }> {
  const opened = await target.open();
  const server = await startTestServer(opened.store, options);
  return {
    server,
    store: opened.store,
    close: async () => {
      await server.close();
      await opened.close();
    },
  };
}

/**
 * The whole journal once `ready` holds. On PostgreSQL an event becomes readable only when every
 * older writing transaction on the server has ended (docs/event-journal.md), and other test
 * files share the server, so a reader polls, as a real client does.
 */
export async function allEvents(server: TestServer, ready: (events: any[]) => boolean): Promise<any[]> {
  for (let attempt = 0; ; attempt++) {
    const out: any[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await server.api('GET', `/events?limit=500${cursor ? `&cursor=${cursor}` : ''}`);
      out.push(...page.body.items);
      if (page.body.items.length === 0) break;
      cursor = page.body.nextCursor;
    }
    if (ready(out) || attempt >= 100) return out;
    await new Promise((r) => setTimeout(r, 50));
  }
}
