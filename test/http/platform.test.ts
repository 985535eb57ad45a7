import { SystemClock } from '@baton/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { adminToken, idem, openTestServer, startTestServer, type TestServer } from '../support/server';

const scopeId = '11111111-1111-4111-8111-111111111111';
const budgetBody = { name: 'shared', currency: 'USD', scale: 2, limitMinor: '1000' };

describe.each(storeTargets())('auth, idempotency, errors and events on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;
  let budgetId: string;

  beforeAll(async () => {
    ({ server, close } = await openTestServer(target));
    budgetId = (await server.api('POST', '/budgets', { body: budgetBody, idem: idem() })).body.id;
  });
  afterAll(async () => close());

  describe('authentication', () => {
    it.each([
      ['no key', null],
      ['a malformed key', 'secret'],
      ['an unknown key', `bk_${'0'.repeat(32)}_${'A'.repeat(43)}`],
    ])('%s is UNAUTHENTICATED', async (_what, key) => {
      const res = await server.api('GET', '/budgets', { key });
      expect(res.statusCode).toBe(401);
      expect(res.body.error.code).toBe('UNAUTHENTICATED');
    });

    it('a revoked key is UNAUTHENTICATED', async () => {
      const created = await server.admin('POST', `/orgs/${server.orgId}/keys`, { name: 'doomed' });
      expect((await server.api('GET', '/budgets', { key: created.body.secret })).statusCode).toBe(200);
      const revoked = await server.admin('POST', `/keys/${created.body.id}/revoke`);
      expect(revoked.body.revokedAt).not.toBeNull();
      expect((await server.api('GET', '/budgets', { key: created.body.secret })).statusCode).toBe(401);
    });

    it('a right key id with a wrong secret is UNAUTHENTICATED', async () => {
      const forged = server.key.slice(0, -4) + (server.key.endsWith('AAAA') ? 'BBBB' : 'AAAA');
      expect((await server.api('GET', '/budgets', { key: forged })).statusCode).toBe(401);
    });

    it('authentication comes before validation: a stranger never learns the schema', async () => {
      const res = await server.api('POST', `/budgets/${budgetId}/reserve`, { key: null, body: { nonsense: true } });
      expect(res.statusCode).toBe(401);
    });

    it('another organization\'s space is NOT_FOUND', async () => {
      const org = await server.admin('POST', '/orgs', { name: 'other-org' });
      const space = await server.admin('POST', `/orgs/${org.body.id}/spaces`, { name: 'theirs' });
      const res = await server.inject('GET', `/v1/spaces/${space.body.id}/budgets`, { authorization: `Bearer ${server.key}` });
      expect(res.statusCode).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
      const theirKey = await server.admin('POST', `/orgs/${org.body.id}/keys`, { name: 'k' });
      const ours = await server.inject('GET', `/v1/spaces/${server.spaceId}/budgets/${budgetId}`, { authorization: `Bearer ${theirKey.body.secret}` });
      expect(ours.statusCode).toBe(404);
    });

    it('a key limited to other spaces is FORBIDDEN here', async () => {
      const second = await server.admin('POST', `/orgs/${server.orgId}/spaces`, { name: 'second' });
      const limited = await server.newKey({ spaceIds: [second.body.id] });
      const res = await server.api('GET', '/budgets', { key: limited });
      expect(res.statusCode).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
      const there = await server.inject('GET', `/v1/spaces/${second.body.id}/budgets`, { authorization: `Bearer ${limited}` });
      expect(there.statusCode).toBe(200);
    });

    it.each([
      ['GET', '/budgets', 'coordination_read', ['coordination_write']],
      ['GET', '/events', 'coordination_read', ['resource_config']],
      ['POST', '/budgets/{id}/settle', 'coordination_write', ['usage_read']],
    ])('%s %s needs %s', async (method, path, permission, held) => {
      const key = await server.newKey({ permissions: held });
      const res = await server.api(method as 'GET', path.replace('{id}', budgetId), { key, body: method === 'POST' ? {} : undefined });
      expect(res.statusCode).toBe(403);
      expect(res.body.error.message).toBe(`credential lacks ${permission}`);
    });
  });

  describe('idempotency', () => {
    const body = { scopeId, holder: 'w', amountMinor: '1' };

    it('a replay returns the first reply with Idempotent-Replayed and applies nothing twice', async () => {
      const key = idem();
      const first = await server.api('POST', `/budgets/${budgetId}/reserve`, { body, idem: key });
      const second = await server.api('POST', `/budgets/${budgetId}/reserve`, { body: { amountMinor: '1', holder: 'w', scopeId }, idem: key });
      expect(first.statusCode).toBe(201);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      expect(second.statusCode).toBe(201);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(second.body).toEqual(first.body);
      const view = await server.api('GET', `/budgets/${budgetId}`);
      expect(view.body.reservations.filter((r: { id: string }) => r.id === first.body.id)).toHaveLength(1);
    });

    it('the same key with another body is IDEMPOTENCY_KEY_REUSED (422)', async () => {
      const key = idem();
      await server.api('POST', `/budgets/${budgetId}/reserve`, { body, idem: key });
      const res = await server.api('POST', `/budgets/${budgetId}/reserve`, { body: { ...body, amountMinor: '2' }, idem: key });
      expect(res.statusCode).toBe(422);
      expect(res.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    });

    /** The raw reply, to compare bodies byte for byte. */
    const raw = async (method: 'POST', path: string, payload: unknown, key: string, requestId: string) => {
      const res = await server.baton.app.inject({
        method, url: `/v1/spaces/${server.spaceId}${path}`, payload: payload as object,
        headers: { authorization: `Bearer ${server.key}`, 'idempotency-key': key, 'x-request-id': requestId },
      });
      return { statusCode: res.statusCode, headers: res.headers, text: res.body };
    };

    it("replays a stored business error byte for byte, the first request's id in the body and in X-Request-Id alike", async () => {
      const key = idem();
      const over = { ...body, amountMinor: '999999' };
      const first = await raw('POST', `/budgets/${budgetId}/reserve`, over, key, 'first-req-1');
      expect(JSON.parse(first.text).error).toMatchObject({ code: 'INSUFFICIENT_BUDGET', requestId: 'first-req-1' });
      const again = await raw('POST', `/budgets/${budgetId}/reserve`, over, key, 'replay-req-1');
      expect(again.statusCode).toBe(409);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.text).toBe(first.text);
      expect(again.headers['x-request-id']).toBe('first-req-1');
    });

    it('replays a success and a batch with a failed item byte for byte', async () => {
      const key = idem();
      const created = await raw('POST', `/budgets/${budgetId}/reserve`, body, key, 'first-req-2');
      expect(created.statusCode).toBe(201);
      expect((await raw('POST', `/budgets/${budgetId}/reserve`, body, key, 'replay-req-2')).text).toBe(created.text);
      const batchKey = idem();
      const items = { items: [{ messageId: '00000000-0000-4000-8000-000000000000', token: 'stale' }] };
      const batch = await raw('POST', '/messages/complete-batch', items, batchKey, 'first-req-3');
      expect(JSON.parse(batch.text).items[0].body.error).toMatchObject({ requestId: 'first-req-3' });
      expect((await raw('POST', '/messages/complete-batch', items, batchKey, 'replay-req-3')).text).toBe(batch.text);
    });

    it('a validation error is not stored: the key stays free', async () => {
      const key = idem();
      const bad = await server.api('POST', `/budgets/${budgetId}/reserve`, { body: { ...body, amountMinor: 'x' }, idem: key });
      expect(bad.statusCode).toBe(400);
      const good = await server.api('POST', `/budgets/${budgetId}/reserve`, { body, idem: key });
      expect(good.statusCode).toBe(201);
      expect(good.headers['idempotent-replayed']).toBeUndefined();
    });

    it('an optional key on settle replays the stored reply', async () => {
      const r = (await server.api('POST', `/budgets/${budgetId}/reserve`, { body, idem: idem() })).body;
      const key = idem();
      const first = await server.api('POST', `/budgets/${budgetId}/settle`, { body: { reservationId: r.id, amountMinor: '1', workKey: 'idem-settle' }, idem: key });
      const again = await server.api('POST', `/budgets/${budgetId}/settle`, { body: { reservationId: r.id, amountMinor: '1', workKey: 'idem-settle' }, idem: key });
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toEqual(first.body);
    });

    it('a key longer than 255 characters is VALIDATION_FAILED', async () => {
      const res = await server.api('POST', `/budgets/${budgetId}/reserve`, { body, idem: 'k'.repeat(256) });
      expect(res.statusCode).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    });

    it('after 24 hours the key is free again', async () => {
      const key = idem();
      await server.api('POST', `/budgets/${budgetId}/reserve`, { body, idem: key });
      server.clock.advance(24 * 60 * 60 * 1000 + 1);
      const res = await server.api('POST', `/budgets/${budgetId}/reserve`, { body: { ...body, amountMinor: '2' }, idem: key });
      expect(res.statusCode).toBe(201);
      expect(res.body.amountMinor).toBe('2');
    });

    it('the retention sweep deletes a record once the replay window has passed, never before', async () => {
      const key = idem();
      await server.api('POST', `/budgets/${budgetId}/reserve`, { body, idem: key });
      const stored = () => server.baton.deps.store.read((tx) => tx.idempotency.get(server.spaceId, key));
      server.clock.advance(24 * 60 * 60 * 1000 - 1);
      await server.baton.deps.runDueWork();
      expect(await stored()).toBeDefined();
      const replay = await server.api('POST', `/budgets/${budgetId}/reserve`, { body, idem: key });
      expect(replay.headers['idempotent-replayed']).toBe('true');
      server.clock.advance(1);
      await server.baton.deps.runDueWork();
      expect(await stored()).toBeUndefined();
    });

    it('two concurrent requests with one key apply once: the other replays or is told the first is in flight', async () => {
      const key = idem();
      const [a, b] = await Promise.all([
        server.api('POST', `/budgets/${budgetId}/reserve`, { body, idem: key }),
        server.api('POST', `/budgets/${budgetId}/reserve`, { body, idem: key }),
      ]);
      const fresh = [a, b].filter((r) => r.statusCode === 201 && r.headers['idempotent-replayed'] === undefined);
      expect(fresh).toHaveLength(1);
      const other = fresh[0] === a ? b : a;
      if (other.statusCode === 201) expect(other.body).toEqual(fresh[0]!.body);
      else expect(other.body.error.code).toBe('IDEMPOTENCY_KEY_IN_FLIGHT');
    });
  });

  describe('error envelope', () => {
    it('an unknown route is NOT_FOUND in the envelope with X-Request-Id', async () => {
      const res = await server.api('GET', '/nothing-here');
      expect(res.statusCode).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
      expect(res.body.error.requestId).toBe(res.headers['x-request-id']);
    });

    it('malformed JSON is VALIDATION_FAILED', async () => {
      const res = await server.inject('POST', `/v1/spaces/${server.spaceId}/budgets/${budgetId}/settle`, { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' }, '{"oops"');
      expect(res.statusCode).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    });

    it('a non-JSON content type is VALIDATION_FAILED', async () => {
      const res = await server.inject('POST', `/v1/spaces/${server.spaceId}/budgets/${budgetId}/settle`, { authorization: `Bearer ${server.key}`, 'content-type': 'text/plain' }, 'hello');
      expect(res.statusCode).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    });

    it('a body over 1 MiB is PAYLOAD_TOO_LARGE', async () => {
      const res = await server.api('POST', `/budgets/${budgetId}/settle`, { body: { pad: 'x'.repeat(1_100_000) } });
      expect(res.statusCode).toBe(413);
      expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    });
  });

  describe('event journal', () => {
    it('every budget change appends an event, read in order by cursor', async () => {
      const b = (await server.api('POST', '/budgets', { body: { ...budgetBody, name: 'journaled' }, idem: idem() })).body;
      const r = (await server.api('POST', `/budgets/${b.id}/reserve`, { body: { scopeId, holder: 'w', amountMinor: '10' }, idem: idem() })).body;
      await server.api('POST', `/budgets/${b.id}/settle`, { body: { reservationId: r.id, amountMinor: '4', workKey: 's1' } });
      await server.api('POST', `/budgets/${b.id}/settle`, { body: { reservationId: r.id, amountMinor: '4', workKey: 's1' } }); // replay: no event
      await server.api('POST', `/budgets/${b.id}/void`, { body: { reservationId: r.id, workKey: 'v1' } });

      // Page by 2 until this budget's four events are in; on PostgreSQL an event may become
      // readable a moment after its commit (docs/event-journal.md), so an empty page means poll.
      const seen: any[] = [];
      let cursor: string | undefined;
      const mineCount = () => seen.filter((e) => e.aggregate.id === b.id).length;
      for (let polls = 0; mineCount() < 4 && polls < 200; polls++) {
        const page = await server.api('GET', `/events?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(page.statusCode).toBe(200);
        expect(page.body.items.length).toBeLessThanOrEqual(2);
        seen.push(...page.body.items);
        if (page.body.items.length === 0) {
          expect(page.body.nextCursor).toBe(cursor ?? '0');
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        cursor = page.body.nextCursor;
      }
      const ids = seen.map((e) => BigInt(e.eventId));
      expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
      expect(new Set(ids).size).toBe(ids.length);
      const mine = seen.filter((e) => e.aggregate.id === b.id).map((e) => e.type);
      expect(mine).toEqual(['budget.created', 'budget.reserved', 'budget.settled', 'budget.voided']);
      const settled = seen.find((e) => e.aggregate.id === b.id && e.type === 'budget.settled');
      expect(settled).toMatchObject({ scopeId, aggregate: { type: 'budget' }, data: { reservationId: r.id, amountMinor: '4', workKey: 's1', reservationState: 'ACTIVE' } });
      expect(settled.occurredAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    });

    it('rejects a bad limit or cursor', async () => {
      expect((await server.api('GET', '/events?limit=501')).statusCode).toBe(400);
      expect((await server.api('GET', '/events?cursor=abc')).statusCode).toBe(400);
    });
  });

  describe('operator API', () => {
    it('creates organizations with a plan, spaces and keys whose secret works once shown', async () => {
      const org = await server.admin('POST', '/orgs', { name: 'builder-co', plan: 'BUILDER' });
      expect(org.statusCode).toBe(201);
      expect(org.body).toMatchObject({ name: 'builder-co', plan: 'BUILDER', limits: { spaces: 10, requestsPerMinute: 1500 } });
      const space = await server.admin('POST', `/orgs/${org.body.id}/spaces`, { name: 'prod' });
      expect(space.body).toMatchObject({ orgId: org.body.id, name: 'prod' });
      const key = await server.admin('POST', `/orgs/${org.body.id}/keys`, { name: 'ci' });
      expect(key.statusCode).toBe(201);
      expect(key.body).toMatchObject({ permissions: ['coordination_read', 'coordination_write', 'resource_config', 'usage_read'], spaceIds: null });
      expect(key.body.secret).toMatch(/^bk_/);
      const use = await server.inject('GET', `/v1/spaces/${space.body.id}/budgets`, { authorization: `Bearer ${key.body.secret}` });
      expect(use.statusCode).toBe(200);
    });

    it('changes a plan; custom limits only on ENTERPRISE', async () => {
      const org = await server.admin('POST', '/orgs', { name: 'grow' });
      expect(org.body.plan).toBe('FREE');
      const ent = await server.admin('PUT', `/orgs/${org.body.id}/plan`, { plan: 'ENTERPRISE', limits: { spaces: 500 } });
      expect(ent.statusCode).toBe(200);
      expect(ent.body).toMatchObject({ plan: 'ENTERPRISE', limits: { spaces: 500 } });
      const bad = await server.admin('PUT', `/orgs/${org.body.id}/plan`, { plan: 'TEAM', limits: { spaces: 5 } });
      expect(bad.statusCode).toBe(400);
      expect((await server.admin('PUT', `/orgs/${org.body.id}/plan`, { plan: 'GOLD' })).statusCode).toBe(400);
    });

    it('enforces the plan\'s space count', async () => {
      const org = await server.admin('POST', '/orgs', { name: 'tiny', plan: 'FREE' });
      await server.admin('POST', `/orgs/${org.body.id}/spaces`, { name: 'a' });
      await server.admin('POST', `/orgs/${org.body.id}/spaces`, { name: 'b' });
      const third = await server.admin('POST', `/orgs/${org.body.id}/spaces`, { name: 'c' });
      expect(third.statusCode).toBe(403);
      expect(third.body.error.code).toBe('ENTITLEMENT_EXCEEDED');
    });

    it('rejects a wrong operator token, an unknown org, and advances the manual clock', async () => {
      const wrong = await server.inject('GET', '/admin/v1/clock', { authorization: 'Bearer nope' });
      expect(wrong.statusCode).toBe(401);
      const unknown = await server.admin('POST', '/orgs/33333333-3333-4333-8333-333333333333/spaces', { name: 'x' });
      expect(unknown.statusCode).toBe(404);
      const before = await server.admin('GET', '/clock');
      expect(before.body.mode).toBe('manual');
      const after = await server.admin('POST', '/clock/advance', { ms: 1500 });
      expect(Date.parse(after.body.now) - Date.parse(before.body.now)).toBe(1500);
      expect((await server.admin('POST', '/clock/advance', { ms: -1 })).statusCode).toBe(400);
    });
  });

  it('serves the OpenAPI document generated from the zod schemas', async () => {
    const res = await server.inject('GET', '/v1/openapi.json', {});
    expect(res.statusCode).toBe(200);
    expect(res.body.openapi).toMatch(/^3\./);
    expect(Object.keys(res.body.paths)).toEqual(expect.arrayContaining(['/v1/spaces/{spaceId}/budgets', '/v1/spaces/{spaceId}/budgets/{id}/settle', '/v1/spaces/{spaceId}/events']));
  });
});

// The memory store and PGlite (one connection) run one transaction at a time: a second request
// waits for the first instead of finding its key held, so only PostgreSQL can show this.
describe.each(storeTargets().filter((t) => t.name === 'postgres'))('idempotency in flight on $name', (target) => {
  it('a request whose key is held by an open transaction is IDEMPOTENCY_KEY_IN_FLIGHT (409)', async () => {
    const opened = await target.open();
    const server = await startTestServer(opened.store);
    try {
      const budgetId = (await server.api('POST', '/budgets', { body: budgetBody, idem: idem() })).body.id;
      const key = idem();
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      const holder = server.baton.deps.store.transaction(async (tx) => {
        expect(await tx.idempotency.tryLock(server.spaceId, key)).toBe(true);
        locked();
        await held;
      });
      await isLocked;
      const res = await server.api('POST', `/budgets/${budgetId}/reserve`, { body: { scopeId, holder: 'w', amountMinor: '1' }, idem: key });
      release();
      await holder;
      expect(res.statusCode).toBe(409);
      expect(res.body.error.code).toBe('IDEMPOTENCY_KEY_IN_FLIGHT');
    } finally {
      await server.close();
      await opened.close();
    }
  });
});

describe('server without operator token, on the system clock', () => {
  it('answers 404 on /admin/v1 and 409 on clock advance needs a manual clock', async () => {
    const { MemoryStore } = await import('@baton/core');
    const bare = await startTestServer(new MemoryStore(), { adminToken: null });
    const res = await bare.inject('GET', '/admin/v1/clock', { authorization: `Bearer ${adminToken}` });
    expect(res.statusCode).toBe(404);
    await bare.close();

    const system = await startTestServer(new MemoryStore(), { clock: new SystemClock() });
    const advance = await system.admin('POST', '/clock/advance', { ms: 10 });
    expect(advance.statusCode).toBe(409);
    expect(advance.body.error.code).toBe('CONFLICT');
    await system.close();
  });

  it('goes unready when draining, and health stays up until closed', async () => {
    const { MemoryStore } = await import('@baton/core');
    const server = await startTestServer(new MemoryStore());
    expect((await server.inject('GET', '/readyz', {})).statusCode).toBe(200);
    expect((await server.inject('GET', '/healthz', {})).statusCode).toBe(200);
    (server.baton.deps.drain as unknown as { start(): void }).start();
    expect((await server.inject('GET', '/readyz', {})).statusCode).toBe(503);
    await server.close();
  });
});
