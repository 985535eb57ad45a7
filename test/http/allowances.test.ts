import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { idem, openTestServer, type TestServer } from '../support/server';

const scopeId = '11111111-1111-4111-8111-111111111111';
const otherId = '22222222-2222-4222-8222-222222222222';

describe.each(storeTargets())('allowances over HTTP on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ server, close } = await openTestServer(target));
  });
  afterAll(async () => close());

  let counter = 0;
  const create = async (unitsLimit = 10, windowSeconds = 60): Promise<string> => {
    const res = await server.api('POST', '/allowances', { body: { name: `quota-${++counter}`, unitsLimit, windowSeconds }, idem: idem() });
    expect(res.statusCode).toBe(201);
    return res.body.id;
  };
  const consume = (id: string, units: number, extra: Record<string, unknown> = {}) =>
    server.api('POST', `/allowances/${id}/consume`, { body: { scopeId, units, holder: 'w', ...extra }, idem: idem() });
  const wait = (id: string, units: number, extra: Record<string, unknown> = {}) =>
    server.api('POST', `/allowances/${id}/wait`, { body: { scopeId, units, holder: 'w', ...extra }, idem: idem() });
  const status = async (id: string) => (await server.api('GET', `/allowances/${id}`)).body;
  const waiter = async (id: string) => (await server.api('GET', `/allowance-waiters/${id}`)).body;
  /** Runs the grant sweep as the clock moves, as an operator's manual clock advance does. */
  const advance = (ms: number) => server.admin('POST', '/clock/advance', { ms });

  describe('create, list, status', () => {
    it('creates (201), repeats an identical create (200), refuses other settings (409)', async () => {
      const res = await server.api('POST', '/allowances', { body: { name: 'llm-tokens', unitsLimit: 100, windowSeconds: 60 }, idem: idem() });
      expect(res.statusCode).toBe(201);
      expect(res.body).toMatchObject({ name: 'llm-tokens', unitsLimit: 100, windowSeconds: 60, usedUnits: 0, availableUnits: 100, cooldownUntil: null, waiting: 0 });
      expect(res.body.windowStartsAt).toBe(res.body.createdAt);
      const again = await server.api('POST', '/allowances', { body: { name: 'llm-tokens', unitsLimit: 100, windowSeconds: 60 }, idem: idem() });
      expect(again.statusCode).toBe(200);
      expect(again.body.id).toBe(res.body.id);
      const other = await server.api('POST', '/allowances', { body: { name: 'llm-tokens', unitsLimit: 5, windowSeconds: 60 }, idem: idem() });
      expect(other.statusCode).toBe(409);
    });

    it.each([
      [{ name: 'x', unitsLimit: 0, windowSeconds: 60 }, 'body.unitsLimit'],
      [{ name: 'x', unitsLimit: 1, windowSeconds: 0 }, 'body.windowSeconds'],
      [{ unitsLimit: 1, windowSeconds: 1 }, 'body.name'],
    ])('rejects %j naming %s', async (body, path) => {
      const res = await server.api('POST', '/allowances', { body, idem: idem() });
      expect(res.statusCode).toBe(400);
      expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    });

    it('a key without resource_config cannot create, may repeat an identical create', async () => {
      const worker = await server.newKey({ permissions: ['coordination_read', 'coordination_write'] });
      const res = await server.api('POST', '/allowances', { key: worker, body: { name: 'nope', unitsLimit: 1, windowSeconds: 1 }, idem: idem() });
      expect(res.body.error.message).toBe('credential lacks resource_config');
      const repeat = await server.api('POST', '/allowances', { key: worker, body: { name: 'llm-tokens', unitsLimit: 100, windowSeconds: 60 }, idem: idem() });
      expect(repeat.statusCode).toBe(200);
    });

    it('lists by name with paging; unknown id is 404', async () => {
      await create();
      const first = await server.api('GET', '/allowances?limit=1');
      expect(first.body.items).toHaveLength(1);
      expect(first.body.nextCursor).not.toBeNull();
      const second = await server.api('GET', `/allowances?limit=1&cursor=${first.body.nextCursor}`);
      expect(second.body.items[0].name > first.body.items[0].name).toBe(true);
      expect((await server.api('GET', `/allowances/${otherId}`)).statusCode).toBe(404);
    });
  });

  describe('consume', () => {
    it('takes units in the window and refuses what does not fit with QUOTA_EXHAUSTED', async () => {
      const id = await create(10);
      const ok = await consume(id, 7);
      expect(ok.statusCode).toBe(201);
      expect(ok.body).toMatchObject({ allowanceId: id, units: 7, replay: false });
      expect(await status(id)).toMatchObject({ usedUnits: 7, availableUnits: 3 });
      await advance(20_500);
      const refused = await consume(id, 4);
      expect(refused.statusCode).toBe(429);
      expect(refused.body.error.code).toBe('QUOTA_EXHAUSTED');
      // 39.5 s left in the 60 s window, rounded up (docs/design/0016-limits-and-retry-after.md).
      expect(refused.headers['retry-after']).toBe('40');
    });

    it('replays a stored QUOTA_EXHAUSTED with Retry-After 1: the stored reply keeps no time', async () => {
      const id = await create(1);
      await consume(id, 1);
      const key = idem();
      const body = { scopeId, units: 1, holder: 'w' };
      const first = await server.api('POST', `/allowances/${id}/consume`, { body, idem: key });
      expect([first.statusCode, first.headers['retry-after']]).toEqual([429, '60']);
      const replayed = await server.api('POST', `/allowances/${id}/consume`, { body, idem: key });
      expect([replayed.statusCode, replayed.headers['idempotent-replayed'], replayed.headers['retry-after']]).toEqual([429, 'true', '1']);
    });

    it('units above unitsLimit are VALIDATION_FAILED', async () => {
      const id = await create(10);
      const res = await consume(id, 11);
      expect(res.statusCode).toBe(400);
      expect(res.body.error.details[0].path).toBe('body.units');
    });

    it('a new window, aligned to createdAt, starts empty', async () => {
      const id = await create(10, 60);
      await consume(id, 10);
      await advance(60_000);
      expect(await status(id)).toMatchObject({ usedUnits: 0, availableUnits: 10 });
      expect((await consume(id, 10)).statusCode).toBe(201);
    });

    it('dedups by workKey: a repeat answers 200 with the same consumption and takes nothing', async () => {
      const id = await create(10);
      const first = await consume(id, 3, { workKey: 'call-1' });
      const again = await consume(id, 3, { workKey: 'call-1' });
      expect(again.statusCode).toBe(200);
      expect(again.body).toMatchObject({ id: first.body.id, replay: true });
      expect((await status(id)).usedUnits).toBe(3);
      expect((await consume(id, 4, { workKey: 'call-1' })).statusCode).toBe(409);
    });

    it('is refused during a cooldown, which a shorter cooldown never shortens', async () => {
      const id = await create(10);
      const cooled = await server.api('POST', `/allowances/${id}/cooldown`, { body: { seconds: 30, reason: 'provider 429' } });
      expect(cooled.statusCode).toBe(200);
      expect(cooled.body.cooldownReason).toBe('provider 429');
      const until = cooled.body.cooldownUntil;
      const shorter = await server.api('POST', `/allowances/${id}/cooldown`, { body: { seconds: 5 } });
      expect(shorter.body.cooldownUntil).toBe(until);
      const cooling = await consume(id, 1);
      expect([cooling.body.error.code, cooling.headers['retry-after']]).toEqual(['QUOTA_EXHAUSTED', '30']);
      await advance(30_000);
      expect((await consume(id, 1)).statusCode).toBe(201);
      expect((await server.api('POST', `/allowances/${id}/cooldown`, { body: { seconds: 0 } })).statusCode).toBe(400);
    });

    it('is refused while waiters are in line', async () => {
      const id = await create(10);
      await consume(id, 10);
      await wait(id, 2);
      await advance(60_000); // the new window grants the waiter; the line is empty again
      expect((await status(id)).waiting).toBe(0);
      await wait(id, 9); // 2 + 9 > 10: waits
      expect((await consume(id, 1)).body.error.code).toBe('QUOTA_EXHAUSTED');
    });

    it('a read-only key is FORBIDDEN; an unknown allowance is NOT_FOUND', async () => {
      const id = await create();
      const reader = await server.newKey({ permissions: ['coordination_read'] });
      const res = await server.api('POST', `/allowances/${id}/consume`, { key: reader, body: { scopeId, units: 1, holder: 'w' }, idem: idem() });
      expect(res.body.error.message).toBe('credential lacks coordination_write');
      expect((await consume(otherId, 1)).statusCode).toBe(404);
    });
  });

  describe('waiters', () => {
    it('the fast path grants at once; otherwise the line is served strictly in order', async () => {
      const id = await create(10, 60);
      const fast = await wait(id, 6);
      expect(fast.statusCode).toBe(201);
      expect(fast.body).toMatchObject({ state: 'GRANTED', units: 6 });
      const big = (await wait(id, 8)).body; // 6 + 8 > 10: waits at the head
      const small = (await wait(id, 1)).body; // would fit, but the head blocks it
      expect([big.state, small.state]).toEqual(['WAITING', 'WAITING']);
      expect((await status(id)).waiting).toBe(2);
      await advance(60_000);
      expect((await waiter(big.id)).state).toBe('GRANTED');
      expect((await waiter(small.id)).state).toBe('GRANTED');
      expect(await status(id)).toMatchObject({ usedUnits: 9, waiting: 0 });
    });

    it('cancelling the head lets the next be granted at once; cancel is only for WAITING', async () => {
      const id = await create(10, 60);
      await consume(id, 5);
      const head = (await wait(id, 6)).body;
      const next = (await wait(id, 5)).body;
      const cancelled = await server.api('POST', `/allowance-waiters/${head.id}/cancel`);
      expect(cancelled.body.state).toBe('CANCELLED');
      expect((await waiter(next.id)).state).toBe('GRANTED');
      const again = await server.api('POST', `/allowance-waiters/${head.id}/cancel`);
      expect(again.statusCode).toBe(409);
      expect(again.body.error.message).toContain('CANCELLED');
      expect((await server.api('POST', `/allowance-waiters/${otherId}/cancel`)).statusCode).toBe(404);
    });

    it('a waiter expires after its ttl and stops blocking the line', async () => {
      const id = await create(10, 600);
      await consume(id, 10);
      const doomed = (await wait(id, 5, { ttlSeconds: 5 })).body;
      expect(doomed.expiresAt).toBe(new Date(server.clock.now() + 5_000).toISOString());
      await advance(5_000);
      expect((await waiter(doomed.id)).state).toBe('EXPIRED');
      expect((await status(id)).waiting).toBe(0);
      expect((await wait(id, 1, { ttlSeconds: 4 })).statusCode).toBe(400);
    });

    it('a cooldown holds grants until it ends', async () => {
      const id = await create(10, 600);
      await server.api('POST', `/allowances/${id}/cooldown`, { body: { seconds: 10 } });
      const w = (await wait(id, 1)).body;
      expect(w.state).toBe('WAITING');
      await advance(9_000);
      expect((await waiter(w.id)).state).toBe('WAITING');
      await advance(1_000);
      expect((await waiter(w.id)).state).toBe('GRANTED');
    });

    it('GET /allowance-waiters/{id}?waitMs= returns when the waiter is granted', async () => {
      const id = await create(10, 20);
      await consume(id, 10);
      const w = (await wait(id, 3)).body;
      const polling = server.api('GET', `/allowance-waiters/${w.id}?waitMs=30000`);
      await new Promise((r) => setTimeout(r, 20));
      await advance(20_000); // the window rolls before the poll's 30 s run out
      const res = await polling;
      expect(res.statusCode).toBe(200);
      expect(res.body.state).toBe('GRANTED');
    });

    it('GET /allowance-waiters/{id}?waitMs= returns WAITING when the wait runs out', async () => {
      const id = await create(10, 600);
      await consume(id, 10);
      const w = (await wait(id, 3)).body;
      const polling = server.api('GET', `/allowance-waiters/${w.id}?waitMs=1000`);
      await new Promise((r) => setTimeout(r, 20));
      server.clock.advance(1_000);
      expect((await polling).body.state).toBe('WAITING');
      expect((await server.api('GET', `/allowance-waiters/${w.id}?waitMs=120001`)).statusCode).toBe(400);
    });
  });
});
