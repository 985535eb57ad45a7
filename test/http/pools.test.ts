import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { allEvents, idem, openTestServer, type TestServer } from '../support/server';

const otherId = '22222222-2222-4222-8222-222222222222';

/** Pools and work limits share every rule but the name of their limit field; both run each case. */
const resources = [
  { path: '/pools', limitField: 'capacity', event: 'pool.created', aggregate: 'pool' },
  { path: '/work-limits', limitField: 'maxConcurrent', event: 'work_limit.created', aggregate: 'work_limit' },
] as const;

describe.each(storeTargets())('pools and work limits over HTTP on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ server, close } = await openTestServer(target));
  });
  afterAll(async () => close());

  describe.each(resources)('$path', ({ path, limitField, event, aggregate }) => {
    const body = (name: string, limit: unknown = 4): Record<string, unknown> => ({ name, [limitField]: limit });
    const create = (name: string, limit: unknown = 4, options: { key?: string; idem?: string } = {}) =>
      server.api('POST', path, { body: body(name, limit), idem: options.idem ?? idem(), ...(options.key === undefined ? {} : { key: options.key }) });

    describe(`POST ${path}`, () => {
      it('creates with nothing in use: 201, and emits one created event', async () => {
        const res = await create('gpu', 1_000_000);
        expect(res.statusCode).toBe(201);
        expect(res.body).toEqual({
          id: expect.stringMatching(/^[0-9a-f-]{36}$/),
          name: 'gpu',
          [limitField]: 1_000_000,
          inUse: 0,
          available: 1_000_000,
          createdAt: '2026-01-01T00:00:00.000Z',
          updatedAt: '2026-01-01T00:00:00.000Z',
        });
        const events = await allEvents(server, (all) => all.some((e) => e.aggregate.id === res.body.id));
        expect(events.filter((e) => e.aggregate.id === res.body.id)).toEqual([
          expect.objectContaining({ type: event, aggregate: { type: aggregate, id: res.body.id }, scopeId: null, data: { name: 'gpu', [limitField]: 1_000_000 } }),
        ]);
      });

      it('a repeat create with identical settings returns the existing one: 200, no new event', async () => {
        const first = await create('repeat', 3);
        const again = await create('repeat', 3);
        expect(again.statusCode).toBe(200);
        expect(again.body).toEqual(first.body);
        const events = await allEvents(server, (all) => all.some((e) => e.aggregate.id === first.body.id));
        expect(events.filter((e) => e.aggregate.id === first.body.id)).toHaveLength(1);
      });

      it('the same name with another limit is CONFLICT (409)', async () => {
        await create('taken', 3);
        const res = await create('taken', 5);
        expect(res.statusCode).toBe(409);
        expect(res.body.error).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('taken exists with other settings') });
      });

      it.each([
        [{ limit: 0 }, `body.${limitField}`],
        [{ limit: 1_000_001 }, `body.${limitField}`],
        [{ limit: 1.5 }, `body.${limitField}`],
        [{ limit: '4' }, `body.${limitField}`],
        [{ limit: null }, `body.${limitField}`],
        [{ name: '' }, 'body.name'],
        [{ name: 'x'.repeat(201) }, 'body.name'],
        [{ name: 'nul\u0000name' }, 'body.name'],
      ])('rejects %j with VALIDATION_FAILED naming %s', async (change, detailPath) => {
        const sent = { ...body('bad', 4), ...('name' in change ? { name: change.name } : {}), ...('limit' in change ? { [limitField]: change.limit } : {}) };
        const res = await server.api('POST', path, { body: sent, idem: idem() });
        expect(res.statusCode).toBe(400);
        expect(res.body.error.code).toBe('VALIDATION_FAILED');
        expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(detailPath);
        expect(res.body.error.requestId).toBe(res.headers['x-request-id']);
      });

      it('a missing field is VALIDATION_FAILED naming it', async () => {
        const res = await server.api('POST', path, { body: { name: 'no-limit' }, idem: idem() });
        expect(res.statusCode).toBe(400);
        expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(`body.${limitField}`);
      });

      it('without Idempotency-Key is IDEMPOTENCY_KEY_REQUIRED (400)', async () => {
        const res = await server.api('POST', path, { body: body('no-key') });
        expect(res.statusCode).toBe(400);
        expect(res.body.error.code).toBe('IDEMPOTENCY_KEY_REQUIRED');
      });

      it('replays a repeated Idempotency-Key; the same key with another body is IDEMPOTENCY_KEY_REUSED (422)', async () => {
        const key = idem();
        const first = await create('idem', 2, { idem: key });
        const replay = await create('idem', 2, { idem: key });
        expect(replay.statusCode).toBe(201);
        expect(replay.headers['idempotent-replayed']).toBe('true');
        expect(replay.body).toEqual(first.body);
        const reused = await create('idem', 3, { idem: key });
        expect(reused.statusCode).toBe(422);
        expect(reused.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
      });

      it('a stored CONFLICT replays under its key', async () => {
        await create('conflict-replay', 2);
        const key = idem();
        const first = await create('conflict-replay', 9, { idem: key });
        const replay = await create('conflict-replay', 9, { idem: key });
        expect(first.statusCode).toBe(409);
        expect(replay.statusCode).toBe(409);
        expect(replay.headers['idempotent-replayed']).toBe('true');
      });

      it('without a key is UNAUTHENTICATED (401)', async () => {
        const res = await server.api('POST', path, { key: null, body: body('anon'), idem: idem() });
        expect(res.statusCode).toBe(401);
        expect(res.body.error.code).toBe('UNAUTHENTICATED');
      });

      it('a key without resource_config: FORBIDDEN for a new name, 200 for an identical repeat, 409 for other settings', async () => {
        const existing = await create('for-workers', 6);
        const worker = await server.newKey({ permissions: ['coordination_read', 'coordination_write'] });
        const missing = await create('not-there', 6, { key: worker });
        expect(missing.statusCode).toBe(403);
        expect(missing.body.error).toMatchObject({ code: 'FORBIDDEN', message: 'credential lacks resource_config' });
        const repeat = await create('for-workers', 6, { key: worker });
        expect(repeat.statusCode).toBe(200);
        expect(repeat.body.id).toBe(existing.body.id);
        expect((await create('for-workers', 7, { key: worker })).statusCode).toBe(409);
      });

      it('concurrent identical creates of one name make one resource: one 201, the rest 200', async () => {
        const replies = await Promise.all(Array.from({ length: 8 }, () => create('raced', 5)));
        expect(replies.map((r) => r.statusCode).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
        expect(new Set(replies.map((r) => r.body.id)).size).toBe(1);
      });
    });

    describe(`GET ${path} and ${path}/{id}`, () => {
      it('shows one; an unknown id is NOT_FOUND; a malformed id is VALIDATION_FAILED', async () => {
        const created = await create('shown', 2);
        const ok = await server.api('GET', `${path}/${created.body.id}`);
        expect(ok.statusCode).toBe(200);
        expect(ok.body).toEqual(created.body);
        expect((await server.api('GET', `${path}/${created.body.id.toUpperCase()}`)).body.id).toBe(created.body.id);
        const missing = await server.api('GET', `${path}/${otherId}`);
        expect(missing.statusCode).toBe(404);
        expect(missing.body.error.code).toBe('NOT_FOUND');
        const malformed = await server.api('GET', `${path}/not-a-uuid`);
        expect(malformed.statusCode).toBe(400);
        expect(malformed.body.error.details.map((d: { path: string }) => d.path)).toContain('params.id');
      });

      it('lists by name, paging with limit and cursor', async () => {
        for (const name of ['page-c', 'page-a', 'Page-B']) await create(name, 1);
        const all: string[] = [];
        let cursor: string | null = null;
        do {
          const query: string = cursor ? `?limit=2&cursor=${cursor}` : '?limit=2';
          const page = await server.api('GET', `${path}${query}`);
          expect(page.statusCode).toBe(200);
          expect(page.body.items.length).toBeLessThanOrEqual(2);
          for (const item of page.body.items) expect(item).toMatchObject({ inUse: 0, available: item[limitField] });
          all.push(...page.body.items.map((r: { name: string }) => r.name));
          cursor = page.body.nextCursor;
        } while (cursor);
        expect(all).toEqual([...all].sort());
        expect(all).toEqual(expect.arrayContaining(['Page-B', 'page-a', 'page-c']));
        expect(new Set(all).size).toBe(all.length);
        const whole = await server.api('GET', path);
        expect(whole.body.nextCursor).toBeNull();
        expect(whole.body.items.map((r: { name: string }) => r.name)).toEqual(all);
      });

      it('rejects a bad limit or cursor with VALIDATION_FAILED', async () => {
        for (const query of ['?limit=501', '?limit=0', '?limit=x', '?cursor=%%%', `?cursor=${Buffer.from('a\u0000b').toString('base64url')}`]) {
          const res = await server.api('GET', `${path}${query}`);
          expect(res.statusCode, query).toBe(400);
          expect(res.body.error.code).toBe('VALIDATION_FAILED');
        }
      });

      it('a key without coordination_read is FORBIDDEN; without a key UNAUTHENTICATED', async () => {
        const created = await create('private', 1);
        const config = await server.newKey({ permissions: ['resource_config'] });
        for (const url of [path, `${path}/${created.body.id}`]) {
          const res = await server.api('GET', url, { key: config });
          expect(res.statusCode).toBe(403);
          expect(res.body.error).toMatchObject({ code: 'FORBIDDEN', message: 'credential lacks coordination_read' });
          expect((await server.api('GET', url, { key: null })).statusCode).toBe(401);
        }
      });

      it("another space's resource is NOT_FOUND here", async () => {
        const created = await create('mine', 1);
        const otherSpace = await server.admin('POST', `/orgs/${server.orgId}/spaces`, { name: `other-${path.slice(1)}` });
        const res = await server.inject('GET', `/v1/spaces/${otherSpace.body.id}${path}/${created.body.id}`, { authorization: `Bearer ${server.key}` });
        expect(res.statusCode).toBe(404);
        const list = await server.inject('GET', `/v1/spaces/${otherSpace.body.id}${path}`, { authorization: `Bearer ${server.key}` });
        expect(list.body.items).toEqual([]);
      });
    });
  });

  it('pools and work limits are separate namespaces: one name may be both', async () => {
    const p = await server.api('POST', '/pools', { body: { name: 'both', capacity: 2 }, idem: idem() });
    const w = await server.api('POST', '/work-limits', { body: { name: 'both', maxConcurrent: 3 }, idem: idem() });
    expect([p.statusCode, w.statusCode]).toEqual([201, 201]);
    expect((await server.api('GET', `/pools/${w.body.id}`)).statusCode).toBe(404);
  });

  it('the OpenAPI document lists the routes and bounds', async () => {
    const doc = (await server.inject('GET', '/v1/openapi.json', {})).body;
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/spaces/{spaceId}/pools', '/v1/spaces/{spaceId}/pools/{id}', '/v1/spaces/{spaceId}/work-limits', '/v1/spaces/{spaceId}/work-limits/{id}']));
    expect(doc.components.schemas.Pool.properties.available).toBeDefined();
  });
});
