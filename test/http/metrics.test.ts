import { readFile } from 'node:fs/promises';
import { MemoryStore, resourceKinds } from '@baton/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { parseExposition, valueOf, type Family } from '../support/prometheus';
import { idem, startTestServer, type Reply, type TestServer } from '../support/server';

/**
 * GET /metrics (docs/operator.md, "Metrics"): the token, the exposition format, and the values
 * after real work. The census sampler's timer is set an hour apart, so a census value changes
 * only when a test samples (sampleNow): what the test shows is the sample, not the request.
 */

const metricsToken = 'test-metrics-token';
const scopeId = '11111111-1111-4111-8111-111111111111';

type Families = Map<string, Family>;

describe.each(storeTargets())('GET /metrics on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const opened = await target.open();
    server = await startTestServer(opened.store, { metricsToken, metricsCensus: { intervalMs: 3_600_000 } });
    close = async () => {
      await server.close();
      await opened.close();
    };
    // The sample taken at start is over before any test looks.
    await sampleNow();
  });
  afterAll(async () => close());

  const sampleNow = (): Promise<void> => server.baton.metrics!.census.sampleNow();

  const scrape = async (headers: Record<string, string>) => {
    const res = await server.baton.app.inject({ method: 'GET', url: '/metrics', headers });
    return { statusCode: res.statusCode, headers: res.headers, text: res.body };
  };
  /** A scrape with the token, parsed strictly: any malformed line fails the test. */
  const metrics = async (): Promise<Families> => {
    const res = await scrape({ authorization: `Bearer ${metricsToken}` });
    expect(res.statusCode, res.text).toBe(200);
    return parseExposition(res.text);
  };
  const value = (families: Families, name: string, labels: Record<string, string> = {}): number => {
    const found = valueOf(families, name, labels);
    expect(found, `${name}${JSON.stringify(labels)}`).toBeDefined();
    return found!;
  };
  /** How much a counter grew between two scrapes; a series not yet shown counts from 0. */
  const grew = (before: Families, after: Families, name: string, labels: Record<string, string>): number =>
    value(after, name, labels) - (valueOf(before, name, labels) ?? 0);

  let counter = 0;
  const created = async (path: string, body: Record<string, unknown>): Promise<string> => {
    const res = await server.api('POST', path, { body, idem: idem() });
    expect(res.statusCode, `${path} ${JSON.stringify(res.body)}`).toBe(201);
    return res.body.id as string;
  };
  const mailbox = async (): Promise<{ id: string; name: string }> => {
    const name = `metrics-box-${++counter}`;
    return { id: await created('/mailboxes', { name }), name };
  };
  const submit = async (box: string, extra: Record<string, unknown> = {}): Promise<void> => {
    const res = await server.api('POST', '/tasks', { body: { scopeId, mailboxId: box, taskKey: `t-${++counter}`, input: {}, ...extra }, idem: idem() });
    expect(res.statusCode, JSON.stringify(res.body)).toBe(201);
  };
  const admit = (box: string, path = '/tasks/admit', extra: Record<string, unknown> = {}): Promise<Reply> =>
    server.api('POST', path, { body: { scopeId, mailboxId: box, holder: 'w', holderSession: 's', leaseSeconds: 60, ...extra }, idem: idem() });
  const recv = (box: string, extra: Record<string, unknown> = {}): Promise<Reply> =>
    server.api('POST', `/mailboxes/${box}/recv`, { body: { scopeId, holder: 'w', holderSession: 's', ...extra } });
  const send = async (box: string): Promise<void> => {
    expect((await server.api('POST', `/mailboxes/${box}/messages`, { body: { scopeId, payload: 'job' }, idem: idem() })).statusCode).toBe(201);
  };

  it('refuses a scrape without the token or with a wrong one: 401 in the error envelope', async () => {
    const refused: Record<string, string>[] = [{}, { authorization: 'Bearer wrong' }, { authorization: `Bearer ${metricsToken}x` }, { authorization: `Basic ${metricsToken}` }, { authorization: `Bearer ${server.key}` }];
    for (const headers of refused) {
      const res = await scrape(headers);
      expect(res.statusCode, JSON.stringify(headers)).toBe(401);
      expect(JSON.parse(res.text)).toEqual({ error: { code: 'UNAUTHENTICATED', message: 'send Authorization: Bearer <metrics token>', requestId: res.headers['x-request-id'] } });
    }
  });

  it('serves the text exposition, every family with HELP and TYPE, Node defaults included', async () => {
    const res = await scrape({ authorization: `Bearer ${metricsToken}` });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const families = parseExposition(res.text);
    expect(families.get('baton_http_requests_total')?.type).toBe('counter');
    expect(families.get('baton_http_request_duration_seconds')?.type).toBe('histogram');
    expect(families.get('baton_long_polls_parked')?.type).toBe('gauge');
    expect(families.get('baton_mailbox_messages')?.type).toBe('gauge');
    // Event-loop lag and the rest of Node's defaults, under their usual names.
    expect(families.get('nodejs_eventloop_lag_seconds')?.type).toBe('gauge');
    expect(value(families, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    // Each resource kind shows from the start.
    for (const resource of resourceKinds) expect(valueOf(families, 'baton_admissions_blocked_total', { resource })).toBeGreaterThanOrEqual(0);
  });

  it('is left out of the OpenAPI document', async () => {
    const doc = await server.inject('GET', '/v1/openapi.json', {});
    expect(doc.statusCode).toBe(200);
    expect(Object.keys(doc.body.paths)).not.toContain('/metrics');
    expect(Object.keys(doc.body.paths)).toContain('/v1/spaces/{spaceId}/tasks');
  });

  it('counts requests by route pattern, method and status, and times them, never by raw URL', async () => {
    const box = await mailbox();
    await submit(box.id);
    const before = await metrics();
    await submit(box.id);
    const admitted = await admit(box.id);
    expect(admitted.statusCode).toBe(200);
    expect((await server.api('POST', `/messages/${admitted.body.messageId}/complete`, { body: { token: admitted.body.token } })).statusCode).toBe(200);
    expect((await server.inject('GET', `/v1/spaces/${server.spaceId}/nothing-here`, {})).statusCode).toBe(404);
    const after = await metrics();

    const requests = (route: string, method: string, status: string) => grew(before, after, 'baton_http_requests_total', { route, method, status });
    expect(requests('/v1/spaces/:spaceId/tasks', 'POST', '201')).toBe(1);
    expect(requests('/v1/spaces/:spaceId/tasks/admit', 'POST', '200')).toBe(1);
    expect(requests('/v1/spaces/:spaceId/messages/:id/complete', 'POST', '200')).toBe(1);
    expect(requests('unmatched', 'GET', '404')).toBe(1);
    const timed = { route: '/v1/spaces/:spaceId/tasks', method: 'POST' };
    expect(grew(before, after, 'baton_http_request_duration_seconds_count', timed)).toBe(1);
    expect(grew(before, after, 'baton_http_request_duration_seconds_sum', timed)).toBeGreaterThan(0);
    // Cardinality stays bounded: no series carries an id from a URL.
    const routes = after.get('baton_http_requests_total')!.samples.map((s) => s.labels.route!);
    expect(routes.some((route) => route.includes(server.spaceId) || route.includes(admitted.body.messageId))).toBe(false);
  });

  it('samples READY, CLAIMED and DEAD and the oldest READY age per mailbox when the census runs, not per request', async () => {
    const box = await mailbox();
    for (let i = 0; i < 3; i++) await submit(box.id);
    expect((await admit(box.id)).statusCode).toBe(200);
    const labels = { space: server.spaceId, mailbox: box.name };
    // Not sampled yet: the requests themselves did not touch the census.
    expect(valueOf(await metrics(), 'baton_mailbox_messages', { ...labels, state: 'READY' })).toBeUndefined();

    server.clock.advance(5_000);
    await sampleNow();
    const families = await metrics();
    expect(value(families, 'baton_mailbox_messages', { ...labels, state: 'READY' })).toBe(2);
    expect(value(families, 'baton_mailbox_messages', { ...labels, state: 'CLAIMED' })).toBe(1);
    expect(value(families, 'baton_mailbox_messages', { ...labels, state: 'DEAD' })).toBe(0);
    expect(value(families, 'baton_mailbox_oldest_ready_age_seconds', labels)).toBe(5);
    expect(value(families, 'baton_census_duration_seconds')).toBeGreaterThan(0);
  });

  it('samples allowance wait lines: waiters and the oldest one\'s age', async () => {
    const name = `metrics-quota-${++counter}`;
    const allowance = await created('/allowances', { name, unitsLimit: 1, windowSeconds: 3600 });
    expect((await server.api('POST', `/allowances/${allowance}/consume`, { body: { scopeId, units: 1, holder: 'w' }, idem: idem() })).statusCode).toBe(201);
    for (let i = 0; i < 2; i++) {
      const waited = await server.api('POST', `/allowances/${allowance}/wait`, { body: { scopeId, units: 1, holder: `w${i}` }, idem: idem() });
      expect(waited.body.state, JSON.stringify(waited.body)).toBe('WAITING');
    }
    server.clock.advance(2_000);
    await sampleNow();
    const families = await metrics();
    expect(value(families, 'baton_allowance_waiters', { space: server.spaceId, allowance: name })).toBe(2);
    expect(value(families, 'baton_allowance_oldest_waiter_age_seconds', { space: server.spaceId, allowance: name })).toBe(2);
  });

  it('shows a long poll as parked while it waits, and no more once a send wakes it', async () => {
    const box = await mailbox();
    expect(value(await metrics(), 'baton_long_polls_parked')).toBe(0);
    const pending = recv(box.id, { waitMs: 20_000 });
    let parked = 0;
    for (let i = 0; i < 200 && parked === 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
      parked = value(await metrics(), 'baton_long_polls_parked');
    }
    expect(parked).toBe(1);
    await send(box.id);
    expect((await pending).statusCode).toBe(200);
    expect(value(await metrics(), 'baton_long_polls_parked')).toBe(0);
  });

  it('counts lease expiries from the journal events the sweep committed', async () => {
    const box = await mailbox();
    await send(box.id);
    expect((await recv(box.id, { leaseSeconds: 5 })).statusCode).toBe(200);
    const before = await metrics();
    // Runs the due work (the lease sweep) before it answers.
    expect((await server.admin('POST', '/clock/advance', { ms: 6_000 })).statusCode).toBe(200);
    const after = await metrics();
    expect(grew(before, after, 'baton_message_lease_expiries_total', {})).toBe(1);
    expect(grew(before, after, 'baton_events_total', { type: 'message.lease_expired' })).toBe(1);
    expect(grew(before, after, 'baton_events_total', { type: 'message.sent' })).toBe(0);
  });

  it('counts admissions blocked by the kind of resource found short, for admit and admit-batch', async () => {
    const pool = `metrics-gpu-${++counter}`;
    await created('/pools', { name: pool, capacity: 1 });
    const box = await mailbox();
    const needsPool = { requirements: { pools: [{ name: pool, units: 1 }], quotas: [], budgets: [] } };
    await submit(box.id, needsPool);
    await submit(box.id, needsPool);
    expect((await admit(box.id)).statusCode).toBe(200);
    const before = await metrics();
    expect((await admit(box.id)).statusCode).toBe(204);
    expect((await admit(box.id, '/tasks/admit-batch', { maxTasks: 5 })).statusCode).toBe(204);
    const after = await metrics();
    expect(grew(before, after, 'baton_admissions_blocked_total', { resource: 'pool' })).toBe(2);
    for (const resource of ['allowance', 'budget', 'work_limit']) expect(grew(before, after, 'baton_admissions_blocked_total', { resource })).toBe(0);
  });

  it('reports the pool and the journal horizon lag on PostgreSQL, and neither elsewhere', async () => {
    await sampleNow();
    const families = await metrics();
    if (target.name === 'postgres') {
      expect(value(families, 'baton_db_pool_connections')).toBeGreaterThanOrEqual(1);
      expect(value(families, 'baton_db_pool_idle_connections')).toBeLessThanOrEqual(value(families, 'baton_db_pool_connections'));
      expect(value(families, 'baton_db_pool_waiting_checkouts')).toBe(0);
      // Other test files share the PostgreSQL server, so their transactions may be the oldest.
      const lag = value(families, 'baton_journal_horizon_lag_seconds');
      expect(lag).toBeGreaterThanOrEqual(0);
      expect(lag).toBeLessThan(600);
    } else {
      for (const name of ['baton_db_pool_connections', 'baton_db_pool_idle_connections', 'baton_db_pool_waiting_checkouts', 'baton_journal_horizon_lag_seconds']) {
        expect(families.has(name), name).toBe(false);
      }
    }
  });

  it('keeps docs/operator.md and the Grafana dashboard in step with what is served', async () => {
    await sampleNow();
    const families = await metrics();
    const served = [...families.keys()].filter((name) => name.startsWith('baton_'));
    const operatorDoc = await readFile(new URL('../../docs/operator.md', import.meta.url), 'utf8');
    for (const name of served) expect(operatorDoc, `${name} is not described in docs/operator.md`).toContain(`\`${name}\``);
    const dashboard = await readFile(new URL('../../docs/grafana/baton-dashboard.json', import.meta.url), 'utf8');
    const queried = new Set([...dashboard.matchAll(/\b((?:baton|nodejs|process)_[a-z0-9_]+?)(?:_bucket)?\{/g)].map((m) => m[1]!));
    expect(queried.size).toBeGreaterThan(10);
    const postgresOnly = /^baton_(db_pool_|journal_horizon_)/;
    for (const name of queried) {
      if (target.name !== 'postgres' && postgresOnly.test(name)) continue;
      expect(families.has(name), `the dashboard queries ${name}, which is not served`).toBe(true);
    }
  });
});

describe('GET /metrics without BATON_METRICS_TOKEN', () => {
  it('answers 404 as an unknown route does, whatever the token, and measures nothing', async () => {
    const server = await startTestServer(new MemoryStore());
    try {
      expect(server.baton.metrics).toBeUndefined();
      const tried: Record<string, string>[] = [{}, { authorization: `Bearer ${metricsToken}` }];
      for (const headers of tried) {
        const res = await server.inject('GET', '/metrics', headers);
        expect(res.statusCode).toBe(404);
        expect(res.body).toEqual({ error: { code: 'NOT_FOUND', message: 'no route GET /metrics', requestId: res.headers['x-request-id'] } });
      }
    } finally {
      await server.close();
    }
  });
});
