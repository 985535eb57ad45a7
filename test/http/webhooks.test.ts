import { ManualClock, SeededRandom } from '@baton/core';
import { WebhookDispatcher, defaultDispatcherOptions } from '@baton-coordination/server/webhooks/dispatcher';
import { webhookMetrics } from '@baton-coordination/server/metrics/webhook-metrics';
import { Registry } from 'prom-client';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { idem, openTestServer, type TestServer } from '../support/server';
import { WebhookReceiver, type Behaviour, type Receipt } from '../support/webhook-receiver';

const secretKey = Buffer.alloc(32, 9);
const hourMs = 3_600_000;

/** The signature the standardwebhooks library computes for what was received (any timestamp). */
function expectSigned(r: Receipt, secret: string): void {
  const timestamp = new Date(Number(r.headers['webhook-timestamp']) * 1000);
  expect(r.headers['webhook-signature']).toBe(new Webhook(secret).sign(r.headers['webhook-id']!, timestamp, r.body));
}

describe.each(storeTargets())('webhooks over HTTP on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;
  const receiver = new WebhookReceiver();
  let n = 0;

  beforeAll(async () => {
    await receiver.start();
    // The wall clock's now, so standardwebhooks' own 5-minute timestamp check passes at first.
    const clock = new ManualClock(Date.now());
    ({ server, close } = await openTestServer(target, {
      clock,
      webhooks: { secretKey, allowPrivate: true, timeoutMs: 500, intervalMs: 100 * 365 * 24 * hourMs, schedule: { baseDelayMs: 5_000, maxDelayMs: hourMs, pauseAfterMs: 24 * hourMs } },
    }));
  });
  afterAll(async () => {
    await close();
    await receiver.stop();
  });

  /** A destination on a fresh path, created after every event so far; it sees pool.created only. */
  async function destination(behaviour?: Behaviour): Promise<{ id: string; secret: string; path: string }> {
    const path = `/hook-${++n}`;
    if (behaviour) receiver.behaviours.set(path, behaviour);
    server.clock.advance(1_000);
    const res = await server.api('POST', '/destinations', { body: { url: receiver.url(path), eventTypes: ['pool.*'] }, idem: idem() });
    expect(res.statusCode).toBe(201);
    server.clock.advance(1_000);
    return { id: res.body.id, secret: res.body.signingSecret, path };
  }

  async function pools(prefix: string, count: number): Promise<string[]> {
    const names = Array.from({ length: count }, (_v, i) => `${prefix}-${i}`);
    for (const name of names) expect((await server.api('POST', '/pools', { body: { name, capacity: 1 }, idem: idem() })).statusCode).toBe(201);
    return names;
  }

  /** Runs due work until `done` holds: on PostgreSQL events pass the journal's horizon a little later. */
  async function dispatchUntil(done: () => boolean): Promise<void> {
    for (let i = 0; i < 100 && !done(); i++) {
      await server.baton.deps.runDueWork();
      if (!done()) await new Promise((r) => setTimeout(r, 20));
    }
    expect(done()).toBe(true);
  }

  const names = (path: string): string[] => receiver.at(path).map((r) => JSON.parse(r.body).data.name as string);

  it('delivers matching events in journal order, signed (Standard Webhooks), once each', async () => {
    const d = await destination();
    expect(d.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const created = await pools('order', 5);
    await dispatchUntil(() => receiver.at(d.path).length >= 5);
    expect(names(d.path)).toEqual(created);
    for (const r of receiver.at(d.path)) {
      // Verified by the library itself, timestamp tolerance included.
      expect(new Webhook(d.secret).verify(r.body, r.headers)).toMatchObject({ type: 'pool.created', aggregate: { type: 'pool' } });
      expect(r.headers['webhook-id']).toBe(JSON.parse(r.body).eventId);
    }
    const view = await server.api('GET', `/destinations/${d.id}`);
    expect(view.body).toMatchObject({ state: 'ACTIVE', deliveredCount: 5, failedCount: 0, consecutiveFailures: 0 });
    const deliveries = await server.api('GET', `/deliveries?destinationId=${d.id}`);
    expect(deliveries.body.items).toHaveLength(5);
    expect(deliveries.body.items[0]).toMatchObject({ destinationId: d.id, attempt: 1, status: 'SUCCEEDED', httpStatus: 204, error: null, nextAttemptAt: null });
    await server.baton.deps.runDueWork();
    expect(receiver.at(d.path)).toHaveLength(5);
    await server.api('DELETE', `/destinations/${d.id}`);
  });

  it('never shows the secret after creation; a replayed create answers the same secret, stored only sealed', async () => {
    const key = idem();
    const body = { url: receiver.url('/replayed'), eventTypes: ['nothing.*'] };
    const first = await server.api('POST', '/destinations', { body, idem: key });
    const again = await server.api('POST', '/destinations', { body, idem: key });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    const stored = await server.baton.deps.store.read((tx) => tx.idempotency.get(server.spaceId, key));
    expect(JSON.stringify(stored)).not.toContain(first.body.signingSecret);
    await server.api('DELETE', `/destinations/${first.body.id}`);
    const d = await destination();
    const one = await server.api('GET', `/destinations/${d.id}`);
    const all = await server.api('GET', '/destinations');
    for (const reply of [one, all]) {
      expect(JSON.stringify(reply.body)).not.toContain(d.secret);
      expect(JSON.stringify(reply.body)).not.toContain('sealed');
    }
    expect(all.body.items.map((x: { id: string }) => x.id)).toContain(d.id);
    expect((await server.api('DELETE', `/destinations/${d.id}`)).statusCode).toBe(200);
    expect((await server.api('GET', `/destinations/${d.id}`)).statusCode).toBe(404);
  });

  it('retries a receiver that is down with backoff, then delivers; every attempt is in GET /deliveries', async () => {
    let up = false;
    const d = await destination((_q, res) => res.writeHead(up ? 200 : 500).end(up ? 'ok' : 'down for maintenance'));
    await pools('retry', 1);
    await dispatchUntil(() => receiver.at(d.path).length >= 1);
    // Not due again before its backoff: nothing is sent.
    await server.baton.deps.runDueWork();
    expect(receiver.at(d.path)).toHaveLength(1);
    server.clock.advance(hourMs);
    await dispatchUntil(() => receiver.at(d.path).length >= 2);
    up = true;
    server.clock.advance(hourMs);
    await dispatchUntil(() => receiver.at(d.path).length >= 3);
    const bodies = receiver.at(d.path).map((r) => r.body);
    expect(new Set(bodies).size).toBe(1);
    receiver.at(d.path).forEach((r) => expectSigned(r, d.secret));
    const deliveries = (await server.api('GET', `/deliveries?destinationId=${d.id}`)).body.items;
    expect(deliveries.map((x: { status: string; attempt: number; httpStatus: number }) => [x.status, x.attempt, x.httpStatus])).toEqual([
      ['SUCCEEDED', 3, 200],
      ['FAILED', 2, 500],
      ['FAILED', 1, 500],
    ]);
    expect(deliveries[2]).toMatchObject({ error: 'HTTP 500', responseBody: 'down for maintenance' });
    expect(Date.parse(deliveries[2].nextAttemptAt) - Date.parse(deliveries[2].attemptedAt)).toBeLessThanOrEqual(5_000);
    const failed = (await server.api('GET', `/deliveries?destinationId=${d.id}&status=FAILED&limit=1`)).body;
    expect(failed.items).toHaveLength(1);
    const next = (await server.api('GET', `/deliveries?destinationId=${d.id}&status=FAILED&limit=1&cursor=${failed.nextCursor}`)).body;
    expect(next.items[0].attempt).toBe(1);
    expect((await server.api('GET', `/destinations/${d.id}`)).body).toMatchObject({ deliveredCount: 1, failedCount: 2, consecutiveFailures: 0, state: 'ACTIVE' });
    await server.api('DELETE', `/destinations/${d.id}`);
  });

  it('does not follow a redirect: a 3xx is a failed attempt', async () => {
    const target = await destination();
    const d = await destination((_q, res) => res.writeHead(302, { location: receiver.url(target.path) }).end());
    await pools('redirect', 1);
    await dispatchUntil(() => receiver.at(d.path).length >= 1);
    const [attempt] = (await server.api('GET', `/deliveries?destinationId=${d.id}`)).body.items;
    expect(attempt).toMatchObject({ status: 'FAILED', httpStatus: 302, error: 'redirect 302 not followed' });
    await server.api('DELETE', `/destinations/${d.id}`);
    await dispatchUntil(() => receiver.at(target.path).length >= 1);
    // The redirect's target got the event from its own destination only, once.
    expect(names(target.path)).toEqual(['redirect-0']);
    await server.api('DELETE', `/destinations/${target.id}`);
  });

  it('times out a slow receiver (a failed attempt)', async () => {
    const d = await destination((_q, res) => setTimeout(() => res.writeHead(200).end(), 2_000));
    await pools('slow', 1);
    await dispatchUntil(() => receiver.at(d.path).length >= 1);
    const [attempt] = (await server.api('GET', `/deliveries?destinationId=${d.id}`)).body.items;
    expect(attempt).toMatchObject({ status: 'FAILED', httpStatus: null, error: 'timed out after 500 ms' });
    await server.api('DELETE', `/destinations/${d.id}`);
  });

  it('pauses a destination failing for 24 h; resume tries again from the same event', async () => {
    let up = false;
    const d = await destination((_q, res) => res.writeHead(up ? 200 : 503).end());
    await pools('pause', 2);
    await dispatchUntil(() => receiver.at(d.path).length >= 1);
    for (let hours = 0; hours < 26; hours++) {
      server.clock.advance(hourMs);
      await server.baton.deps.runDueWork();
    }
    const paused = (await server.api('GET', `/destinations/${d.id}`)).body;
    expect(paused).toMatchObject({ state: 'PAUSED', deliveredCount: 0, pausedReason: expect.stringContaining('last error: HTTP 503') });
    expect(paused.pausedAt).not.toBeNull();
    const attempts = receiver.at(d.path).length;
    server.clock.advance(hourMs);
    await server.baton.deps.runDueWork();
    expect(receiver.at(d.path)).toHaveLength(attempts);
    expect((await server.api('POST', `/destinations/${d.id}/resume`, { idem: idem() })).body).toMatchObject({ state: 'ACTIVE', pausedAt: null, consecutiveFailures: 0 });
    up = true;
    await dispatchUntil(() => names(d.path).filter((x) => x === 'pause-1').length === 1);
    expect(names(d.path).slice(-2)).toEqual(['pause-0', 'pause-1']);
    expect((await server.api('POST', `/destinations/${d.id}/resume`, { idem: idem() })).statusCode).toBe(409);
    await server.api('DELETE', `/destinations/${d.id}`);
  });

  it('two dispatchers on one store send each event once', async () => {
    const d = await destination();
    const created = await pools('twice', 6);
    const options = { ...defaultDispatcherOptions, secretKey, allowPrivate: true, timeoutMs: 2_000 };
    const store = server.baton.deps.store;
    const a = new WebhookDispatcher(store, server.clock, new SeededRandom(11), undefined, options);
    const b = new WebhookDispatcher(store, server.clock, new SeededRandom(12), undefined, options);
    for (let i = 0; i < 100 && receiver.at(d.path).length < 6; i++) {
      await Promise.all([a.runDue(), b.runDue()]);
      if (receiver.at(d.path).length < 6) await new Promise((r) => setTimeout(r, 20));
    }
    expect(names(d.path)).toEqual(created);
    await server.api('DELETE', `/destinations/${d.id}`);
  });

  it('a started dispatcher delivers as soon as a space it follows commits, not at its next interval', async () => {
    const d = await destination();
    const dispatcher = server.baton.webhooks;
    // The first run claims the destination and so follows its space; the interval is 100 years of a clock that does not move here.
    await dispatcher.runDue();
    dispatcher.start();
    try {
      const created = await pools('woken', 3);
      for (let i = 0; i < 250 && receiver.at(d.path).length < 3; i++) await new Promise((r) => setTimeout(r, 20));
      expect(names(d.path)).toEqual(created);
    } finally {
      await dispatcher.stop();
    }
    await server.api('DELETE', `/destinations/${d.id}`);
  });

  // PostgreSQL alone has a horizon to be behind: memory and PGlite commit one transaction at a time.
  if (target.name === 'postgres') it('a woken dispatcher that finds its event behind the horizon re-reads until it shows', async () => {
    const d = await destination();
    const dispatcher = server.baton.webhooks;
    await dispatcher.runDue();
    dispatcher.start();
    // An open transaction holding an xid keeps later commits' events behind the horizon; its own commit journals nothing, so wakes nobody.
    let release!: () => void;
    let ready!: () => void;
    const held = new Promise<void>((r) => (ready = r));
    const writer = server.baton.deps.store.transaction(async (tx) => {
      await tx.idempotency.put({ spaceId: server.spaceId, key: `holder-${n}`, fingerprint: 'f', statusCode: 200, body: null, createdAt: server.clock.now() });
      // The put is held until the transaction's next statement (coalesced-writes.ts): this read sends it, and so takes the xid.
      await tx.idempotency.get(server.spaceId, `holder-${n}`);
      ready();
      await new Promise<void>((r) => (release = r));
    });
    try {
      await held;
      const created = await pools('held', 1);
      await new Promise((r) => setTimeout(r, 150));
      expect(receiver.at(d.path)).toHaveLength(0);
      release();
      await writer;
      // No commit and no interval wakes it from here: only the re-reads can deliver.
      for (let i = 0; i < 150 && receiver.at(d.path).length < 1; i++) await new Promise((r) => setTimeout(r, 20));
      expect(names(d.path)).toEqual(created);
    } finally {
      release?.();
      await writer;
      await dispatcher.stop();
    }
    await server.api('DELETE', `/destinations/${d.id}`);
  });

  it('reports attempts, their lag from commit and pauses to the metrics', async () => {
    const ok = await destination();
    const failing = await destination((_q, r) => r.writeHead(500).end('down'));
    await pools('measured', 2);
    const registry = new Registry();
    const options = { ...defaultDispatcherOptions, secretKey, allowPrivate: true, timeoutMs: 2_000, schedule: { baseDelayMs: 1, maxDelayMs: 1, pauseAfterMs: 0 }, observer: webhookMetrics(registry) };
    const dispatcher = new WebhookDispatcher(server.baton.deps.store, server.clock, new SeededRandom(13), undefined, options);
    for (let i = 0; i < 100 && (receiver.at(ok.path).length < 2 || receiver.at(failing.path).length < 1); i++) {
      await dispatcher.runDue();
      await new Promise((r) => setTimeout(r, 20));
    }
    const text = await registry.metrics();
    expect(text).toMatch(/baton_webhook_attempts_total\{outcome="succeeded"\} [2-9]/);
    expect(text).toMatch(/baton_webhook_attempts_total\{outcome="failed"\} 1\n/);
    expect(text).toMatch(/baton_webhook_delivery_lag_seconds_count [2-9]/);
    expect(text).toMatch(/baton_webhook_destinations_paused_total 1\n/);
    await server.api('DELETE', `/destinations/${ok.id}`);
    await server.api('DELETE', `/destinations/${failing.id}`);
  });

  it('answers 400 to bad input and to a create without Idempotency-Key', async () => {
    const post = (body: unknown, key: string | null = idem()) => server.api('POST', '/destinations', { body, ...(key === null ? {} : { idem: key }) });
    const noScheme = await post({ url: 'ftp://example.com/hook' });
    expect(noScheme.statusCode).toBe(400);
    expect(JSON.stringify(noScheme.body)).toContain('must start with http:// or https://');
    expect((await post({ url: 'https://example.com/hook', eventTypes: ['Not A Type'] })).statusCode).toBe(400);
    expect((await post({ url: 'https://example.com/hook', eventTypes: 'task.*' })).statusCode).toBe(400);
    expect((await post({})).statusCode).toBe(400);
    const noKey = await post({ url: 'https://example.com/hook' }, null);
    expect(noKey.statusCode).toBe(400);
    expect(noKey.body.error.code).toBe('IDEMPOTENCY_KEY_REQUIRED');
  });
});

describe('webhook address rules (no BATON_WEBHOOK_ALLOW_PRIVATE)', () => {
  const [memory] = storeTargets();
  let server: TestServer;
  let close: () => Promise<void>;
  const receiver = new WebhookReceiver();

  beforeAll(async () => {
    await receiver.start();
    ({ server, close } = await openTestServer(memory!, { webhooks: { secretKey, allowPrivate: false, timeoutMs: 1_000 } }));
  });
  afterAll(async () => {
    await close();
    await receiver.stop();
  });

  it.each(['http://127.0.0.1/x', 'http://10.1.2.3/x', 'http://169.254.169.254/latest/meta-data', 'http://[::1]/x', 'http://[::ffff:127.0.0.1]/x', 'http://[fd00:ec2::254]/x'])(
    'refuses a literal private address at create: %s',
    async (url) => {
      const res = await server.api('POST', '/destinations', { body: { url }, idem: idem() });
      expect(res.statusCode).toBe(400);
      expect(res.body.error.message).toContain('BATON_WEBHOOK_ALLOW_PRIVATE=1');
    },
  );

  it('refuses at connect time a name that resolves to loopback: a failed attempt naming the rule', async () => {
    const res = await server.api('POST', '/destinations', { body: { url: `http://localhost:${receiver.port}/ssrf` }, idem: idem() });
    expect(res.statusCode).toBe(201);
    server.clock.advance(1_000);
    await server.api('POST', '/pools', { body: { name: 'ssrf', capacity: 1 }, idem: idem() });
    await server.baton.deps.runDueWork();
    const [attempt] = (await server.api('GET', '/deliveries')).body.items;
    expect(attempt).toMatchObject({ destinationId: res.body.id, status: 'FAILED', httpStatus: null, error: expect.stringMatching(/loopback addresses are refused/) });
    expect(receiver.received).toHaveLength(0);
  });

  it('pauses a destination whose secret does not open with the dispatcher\'s key, saying why', async () => {
    const res = await server.api('POST', '/destinations', { body: { url: 'https://example.com/hook' }, idem: idem() });
    const other = new WebhookDispatcher(server.baton.deps.store, server.clock, new SeededRandom(3), undefined, {
      ...defaultDispatcherOptions, secretKey: Buffer.alloc(32, 1), allowPrivate: false,
    });
    await other.runDue();
    const view = (await server.api('GET', `/destinations/${res.body.id}`)).body;
    expect(view).toMatchObject({ state: 'PAUSED', pausedReason: expect.stringContaining('BATON_SECRET_KEY') });
  });

  it('refuses to create destinations without BATON_SECRET_KEY', async () => {
    const opened = await memory!.open();
    const { startTestServer } = await import('../support/server');
    const keyless = await startTestServer(opened.store);
    const res = await keyless.api('POST', '/destinations', { body: { url: 'https://example.com/hook' }, idem: idem() });
    expect(res.statusCode).toBe(409);
    expect(res.body.error.message).toContain('BATON_SECRET_KEY');
    await keyless.close();
    await opened.close();
  });
});
