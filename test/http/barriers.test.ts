import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalNotifier, Store } from '@baton/core';
import { storeTargets } from '../support/databases';
import { expectPagingOfFive, type Page } from '../support/paging';
import { allEvents, idem, startTestServer, type Reply, type TestServer } from '../support/server';

const scopeId = '11111111-1111-4111-8111-111111111111';
const unknownId = '22222222-2222-4222-8222-222222222222';

describe.each(storeTargets())('barriers over HTTP on $name', (target) => {
  let store: Store;
  let server: TestServer;
  let closeStore: () => Promise<void>;

  beforeAll(async () => {
    const opened = await target.open();
    store = opened.store;
    closeStore = opened.close;
    server = await startTestServer(store);
  });
  afterAll(async () => {
    await server.close();
    await closeStore();
  });

  const create = async (targetCount: number, at: TestServer = server): Promise<string> => {
    const res = await at.api('POST', '/barriers', { body: { scopeId, target: targetCount }, idem: idem() });
    expect(res.statusCode).toBe(201);
    return res.body.id as string;
  };
  const arrive = (id: string, arrivalKey: string, extra: Record<string, unknown> = {}) => server.api('POST', `/barriers/${id}/arrive`, { body: { arrivalKey, ...extra } });
  const view = async (id: string) => (await server.api('GET', `/barriers/${id}`)).body;
  /** Resolves once a long poll is parked on the notifier, so the test can act while it waits. */
  const parked = async (at: TestServer = server): Promise<void> => {
    const notifier = at.baton.deps.notifier as LocalNotifier;
    await expect.poll(() => notifier.parked, { timeout: 5_000, interval: 5 }).toBeGreaterThan(0);
  };
  const expectError = (res: Reply, status: number, code: string): void => {
    expect(res.statusCode).toBe(status);
    expect(res.body.error.code).toBe(code);
    expect(res.body.error.requestId).toBe(res.headers['x-request-id']);
  };

  describe('POST /barriers', () => {
    it('creates a WAITING barrier in epoch 1: 201', async () => {
      const res = await server.api('POST', '/barriers', { body: { scopeId: scopeId.toUpperCase(), target: 3 }, idem: idem() });
      expect(res.statusCode).toBe(201);
      expect(res.body).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        scopeId,
        state: 'WAITING',
        epoch: 1,
        target: 3,
        arrivals: 0,
        releasedAt: null,
        createdAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-01T00:00:00.000Z',
      });
      expect(await view(res.body.id)).toEqual(res.body);
    });

    it('a retry with its Idempotency-Key replays the same barrier; another key makes another barrier', async () => {
      const key = idem();
      const first = await server.api('POST', '/barriers', { body: { scopeId, target: 2 }, idem: key });
      const again = await server.api('POST', '/barriers', { body: { scopeId, target: 2 }, idem: key });
      expect(again.statusCode).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.id).toBe(first.body.id);
      const other = await server.api('POST', '/barriers', { body: { scopeId, target: 2 }, idem: idem() });
      expect(other.body.id).not.toBe(first.body.id);
    });

    it.each([
      [{ scopeId, target: 0 }, 'body.target'],
      [{ scopeId, target: 100_001 }, 'body.target'],
      [{ scopeId, target: 1.5 }, 'body.target'],
      [{ scopeId, target: '3' }, 'body.target'],
      [{ scopeId }, 'body.target'],
      [{ target: 2 }, 'body.scopeId'],
      [{ scopeId: 'not-a-uuid', target: 2 }, 'body.scopeId'],
    ])('rejects %j with VALIDATION_FAILED naming %s', async (body, path) => {
      const res = await server.api('POST', '/barriers', { body, idem: idem() });
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    });

    it('takes the largest target', async () => {
      expect((await server.api('POST', '/barriers', { body: { scopeId, target: 100_000 }, idem: idem() })).statusCode).toBe(201);
    });

    it('without Idempotency-Key is IDEMPOTENCY_KEY_REQUIRED', async () => {
      expectError(await server.api('POST', '/barriers', { body: { scopeId, target: 2 } }), 400, 'IDEMPOTENCY_KEY_REQUIRED');
    });

    it('a key without resource_config is FORBIDDEN: a barrier has no name, so no repeat create has anything to verify', async () => {
      const worker = await server.newKey({ permissions: ['coordination_read', 'coordination_write'] });
      const res = await server.api('POST', '/barriers', { key: worker, body: { scopeId, target: 2 }, idem: idem() });
      expectError(res, 403, 'FORBIDDEN');
      expect(res.body.error.message).toBe('credential lacks resource_config');
    });

    it('without a key is UNAUTHENTICATED', async () => {
      expectError(await server.api('POST', '/barriers', { key: null, body: { scopeId, target: 2 }, idem: idem() }), 401, 'UNAUTHENTICATED');
      expectError(await server.api('GET', '/barriers', { key: null }), 401, 'UNAUTHENTICATED');
    });
  });

  describe('GET /barriers/{id}', () => {
    it('an unknown id is NOT_FOUND; a malformed id or waitMs is VALIDATION_FAILED', async () => {
      expectError(await server.api('GET', `/barriers/${unknownId}`), 404, 'NOT_FOUND');
      expect((await server.api('GET', `/barriers/${unknownId}`)).body.error.message).toBe('barrier not found');
      expectError(await server.api('GET', `/barriers/${unknownId}?waitMs=1000`), 404, 'NOT_FOUND');
      expectError(await server.api('GET', '/barriers/not-a-uuid'), 400, 'VALIDATION_FAILED');
      const id = await create(2);
      for (const query of ['waitMs=-1', 'waitMs=120001', 'waitMs=1.5', 'waitMs=soon', 'epoch=0']) {
        const res = await server.api('GET', `/barriers/${id}?${query}`);
        expectError(res, 400, 'VALIDATION_FAILED');
        expect(res.body.error.details[0].path).toMatch(/^querystring\./);
      }
    });

    it('reads ids in any case', async () => {
      const id = await create(2);
      expect((await server.api('GET', `/barriers/${id.toUpperCase()}`)).body.id).toBe(id);
    });

    it('a key without coordination_read is FORBIDDEN with the permission named', async () => {
      const config = await server.newKey({ permissions: ['resource_config'] });
      const res = await server.api('GET', `/barriers/${unknownId}`, { key: config });
      expectError(res, 403, 'FORBIDDEN');
      expect(res.body.error.message).toBe('credential lacks coordination_read');
    });
  });

  describe('arrive', () => {
    it('counts distinct arrivalKeys, replays a repeat, and releases exactly at the target', async () => {
      const id = await create(3);
      const a = await arrive(id, 'worker-a');
      expect(a.statusCode).toBe(200);
      expect(a.body).toMatchObject({ id, state: 'WAITING', epoch: 1, arrivals: 1, target: 3, replay: false, releasedAt: null });
      const repeat = await arrive(id, 'worker-a');
      expect(repeat.body).toMatchObject({ state: 'WAITING', arrivals: 1, replay: true });
      expect((await arrive(id, 'worker-b')).body).toMatchObject({ state: 'WAITING', arrivals: 2, replay: false });
      server.clock.advance(1_000);
      const last = await arrive(id, 'worker-c');
      expect(last.body).toMatchObject({ state: 'RELEASED', arrivals: 3, replay: false, releasedAt: '2026-01-01T00:00:01.000Z' });
      expect(await view(id)).toMatchObject({ state: 'RELEASED', arrivals: 3, releasedAt: '2026-01-01T00:00:01.000Z' });

      // After release: a counted key still replays; a new key is CONFLICT naming the state.
      expect((await arrive(id, 'worker-a')).body).toMatchObject({ state: 'RELEASED', arrivals: 3, replay: true });
      const late = await arrive(id, 'worker-d');
      expectError(late, 409, 'CONFLICT');
      expect(late.body.error.message).toContain('RELEASED');
    });

    it('releases a target of 1 on the first arrival', async () => {
      const id = await create(1);
      expect((await arrive(id, 'only')).body).toMatchObject({ state: 'RELEASED', arrivals: 1 });
    });

    it('appends barrier.created, barrier.arrived and barrier.released with the barrier scope, and nothing for a replay', async () => {
      const id = await create(2);
      await arrive(id, 'x');
      await arrive(id, 'x');
      await arrive(id, 'y');
      const events = await barrierEvents(server, id, 4);
      expect(events.map((e) => e.type)).toEqual(['barrier.created', 'barrier.arrived', 'barrier.arrived', 'barrier.released']);
      for (const e of events) expect(e).toMatchObject({ aggregate: { type: 'barrier', id }, scopeId });
      expect(events[0].data).toEqual({ target: 2, epoch: 1 });
      expect(events[1].data).toEqual({ epoch: 1, arrivalKey: 'x', arrivals: 1, target: 2 });
      expect(events[3].data).toEqual({ epoch: 1, arrivals: 2, target: 2 });
    });

    it('with an Idempotency-Key, a retry replays the stored reply', async () => {
      const id = await create(2);
      const key = idem();
      const first = await server.api('POST', `/barriers/${id}/arrive`, { body: { arrivalKey: 'k' }, idem: key });
      const again = await server.api('POST', `/barriers/${id}/arrive`, { body: { arrivalKey: 'k' }, idem: key });
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toEqual(first.body);
      expect(again.body.replay).toBe(false);
      const reused = await server.api('POST', `/barriers/${id}/arrive`, { body: { arrivalKey: 'other' }, idem: key });
      expectError(reused, 422, 'IDEMPOTENCY_KEY_REUSED');
    });

    it('an arrive naming another epoch is CONFLICT, unless its key was counted there', async () => {
      const id = await create(1);
      expect((await arrive(id, 'a', { epoch: 1 })).body).toMatchObject({ state: 'RELEASED', replay: false });
      await server.api('POST', `/barriers/${id}/nextEpoch`);
      // A late retry of the epoch-1 arrival replays instead of counting in epoch 2.
      expect((await arrive(id, 'a', { epoch: 1 })).body).toMatchObject({ epoch: 2, arrivals: 0, replay: true });
      const stale = await arrive(id, 'b', { epoch: 1 });
      expectError(stale, 409, 'CONFLICT');
      expect(stale.body.error.message).toContain('epoch 2');
      expectError(await arrive(id, 'b', { epoch: 3 }), 409, 'CONFLICT');
    });

    it.each([
      [{}, 'body.arrivalKey'],
      [{ arrivalKey: '' }, 'body.arrivalKey'],
      [{ arrivalKey: 'k'.repeat(513) }, 'body.arrivalKey'],
      [{ arrivalKey: 'a\u0000b' }, 'body.arrivalKey'],
      [{ arrivalKey: 7 }, 'body.arrivalKey'],
      [{ arrivalKey: 'k', epoch: 0 }, 'body.epoch'],
    ])('rejects %j naming %s', async (body, path) => {
      const res = await server.api('POST', `/barriers/${unknownId}/arrive`, { body });
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    });

    it('takes an arrivalKey of 512 characters', async () => {
      const id = await create(2);
      expect((await arrive(id, 'k'.repeat(512))).body).toMatchObject({ arrivals: 1 });
    });

    it('an unknown barrier is NOT_FOUND', async () => {
      const res = await arrive(unknownId, 'a');
      expectError(res, 404, 'NOT_FOUND');
      expect(res.body.error.message).toBe('barrier not found');
    });

    it('a read-only key is FORBIDDEN with the permission named', async () => {
      const reader = await server.newKey({ permissions: ['coordination_read', 'resource_config'] });
      const res = await server.api('POST', `/barriers/${unknownId}/arrive`, { key: reader, body: { arrivalKey: 'a' } });
      expectError(res, 403, 'FORBIDDEN');
      expect(res.body.error.message).toBe('credential lacks coordination_write');
    });
  });

  describe('nextEpoch', () => {
    it('a WAITING barrier is CONFLICT naming the state', async () => {
      const id = await create(2);
      const res = await server.api('POST', `/barriers/${id}/nextEpoch`);
      expectError(res, 409, 'CONFLICT');
      expect(res.body.error.message).toContain('WAITING');
    });

    it('moves a RELEASED barrier to its next epoch, where every key counts afresh', async () => {
      const id = await create(2);
      await arrive(id, 'a');
      await arrive(id, 'b');
      const next = await server.api('POST', `/barriers/${id}/nextEpoch`);
      expect(next.statusCode).toBe(200);
      expect(next.body).toMatchObject({ id, state: 'WAITING', epoch: 2, arrivals: 0, releasedAt: null });
      expect((await arrive(id, 'a')).body).toMatchObject({ epoch: 2, arrivals: 1, replay: false });
      expect((await arrive(id, 'b')).body).toMatchObject({ epoch: 2, arrivals: 2, state: 'RELEASED' });
      const events = await barrierEvents(server, id, 7);
      expect(events[4]).toMatchObject({ type: 'barrier.epoch_advanced', scopeId, data: { epoch: 2, previousEpoch: 1, previousState: 'RELEASED' } });
    });

    it('naming the epoch to end: an epoch already over changes nothing (200), a future one is CONFLICT', async () => {
      const id = await create(1);
      await arrive(id, 'a');
      expect((await server.api('POST', `/barriers/${id}/nextEpoch`, { body: { epoch: 1 } })).body).toMatchObject({ epoch: 2, state: 'WAITING' });
      await arrive(id, 'a');
      // A late copy of the first call must not end epoch 2 as well.
      expect((await server.api('POST', `/barriers/${id}/nextEpoch`, { body: { epoch: 1 } })).body).toMatchObject({ epoch: 2, state: 'RELEASED' });
      expectError(await server.api('POST', `/barriers/${id}/nextEpoch`, { body: { epoch: 3 } }), 409, 'CONFLICT');
      expect((await server.api('POST', `/barriers/${id}/nextEpoch`, { body: { epoch: 2 } })).body).toMatchObject({ epoch: 3, state: 'WAITING' });
    });

    it('rejects a malformed epoch; an unknown barrier is NOT_FOUND; a read-only key is FORBIDDEN', async () => {
      const bad = await server.api('POST', `/barriers/${unknownId}/nextEpoch`, { body: { epoch: 'one' } });
      expectError(bad, 400, 'VALIDATION_FAILED');
      expect(bad.body.error.details[0].path).toBe('body.epoch');
      expectError(await server.api('POST', `/barriers/${unknownId}/nextEpoch`), 404, 'NOT_FOUND');
      const reader = await server.newKey({ permissions: ['coordination_read'] });
      expect((await server.api('POST', `/barriers/${unknownId}/nextEpoch`, { key: reader })).body.error.message).toBe('credential lacks coordination_write');
    });
  });

  describe('cancel', () => {
    it('cancels a WAITING barrier; a repeat answers it unchanged; arrivals then conflict unless counted; nextEpoch reuses it', async () => {
      const id = await create(3);
      await arrive(id, 'a');
      const cancelled = await server.api('POST', `/barriers/${id}/cancel`);
      expect(cancelled.statusCode).toBe(200);
      expect(cancelled.body).toMatchObject({ state: 'CANCELLED', epoch: 1, arrivals: 1, releasedAt: null });
      const again = await server.api('POST', `/barriers/${id}/cancel`);
      expect(again.body).toEqual(cancelled.body);

      expect((await arrive(id, 'a')).body).toMatchObject({ state: 'CANCELLED', replay: true });
      const late = await arrive(id, 'b');
      expectError(late, 409, 'CONFLICT');
      expect(late.body.error.message).toContain('CANCELLED');

      expect((await server.api('POST', `/barriers/${id}/nextEpoch`)).body).toMatchObject({ state: 'WAITING', epoch: 2, arrivals: 0 });
      const events = await barrierEvents(server, id, 4);
      expect(events.map((e) => e.type)).toEqual(['barrier.created', 'barrier.arrived', 'barrier.cancelled', 'barrier.epoch_advanced']);
      expect(events[2]).toMatchObject({ scopeId, data: { epoch: 1, arrivals: 1, target: 3 } });
    });

    it('a RELEASED barrier is CONFLICT naming the state', async () => {
      const id = await create(1);
      await arrive(id, 'a');
      const res = await server.api('POST', `/barriers/${id}/cancel`);
      expectError(res, 409, 'CONFLICT');
      expect(res.body.error.message).toContain('RELEASED');
    });

    it('an unknown barrier is NOT_FOUND; a read-only key is FORBIDDEN', async () => {
      expectError(await server.api('POST', `/barriers/${unknownId}/cancel`), 404, 'NOT_FOUND');
      const reader = await server.newKey({ permissions: ['coordination_read'] });
      expect((await server.api('POST', `/barriers/${unknownId}/cancel`, { key: reader })).body.error.message).toBe('credential lacks coordination_write');
    });
  });

  describe('GET /barriers', () => {
    it('lists oldest first, filters by state, and pages with limit and cursor', async () => {
      // A space of its own, so other tests' barriers do not show.
      const own = await startTestServer(store, { seed: 7 });
      try {
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) {
          own.clock.advance(1);
          ids.push(await create(1, own));
        }
        await own.api('POST', `/barriers/${ids[1]}/arrive`, { body: { arrivalKey: 'a' } });
        await own.api('POST', `/barriers/${ids[3]}/cancel`);

        const listed = async (query: string): Promise<string[]> => {
          const out: string[] = [];
          let cursor: string | null = null;
          do {
            const page: Reply = await own.api('GET', `/barriers?limit=2${query}${cursor ? `&cursor=${cursor}` : ''}`);
            expect(page.statusCode).toBe(200);
            expect(page.body.items.length).toBeLessThanOrEqual(2);
            out.push(...page.body.items.map((b: { id: string }) => b.id));
            cursor = page.body.nextCursor;
          } while (cursor);
          return out;
        };
        expect(await listed('')).toEqual(ids);
        expect(await listed('&state=WAITING')).toEqual([ids[0], ids[2], ids[4]]);
        expect(await listed('&state=RELEASED,CANCELLED')).toEqual([ids[1], ids[3]]);
        expect(await listed('&state=CANCELLED,CANCELLED')).toEqual([ids[3]]);
        const all = await own.api('GET', '/barriers');
        expect(all.body).toMatchObject({ nextCursor: null });
        expect(all.body.items[1]).toMatchObject({ id: ids[1], state: 'RELEASED', arrivals: 1 });
      } finally {
        await own.close();
      }
    });

    it('a page holds at most limit barriers and its cursor continues after the last of them; a page that ends the list has none', async () => {
      const own = await startTestServer(store, { seed: 8 });
      try {
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) {
          own.clock.advance(1);
          ids.push(await create(1, own));
        }
        await expectPagingOfFive(async (query) => (await own.api('GET', `/barriers?${query}`)).body as Page<{ id: string }>, ids, (b) => b.id);
      } finally {
        await own.close();
      }
    });

    it('rejects a bad state, limit or cursor with VALIDATION_FAILED', async () => {
      for (const query of ['state=DONE', 'state=WAITING,', 'state=waiting', 'state=', 'limit=0', 'limit=501', 'cursor=%%%', `cursor=${Buffer.from('1:x').toString('base64url')}`]) {
        const res = await server.api('GET', `/barriers?${query}`);
        expectError(res, 400, 'VALIDATION_FAILED');
      }
      expect((await server.api('GET', '/barriers?state=DONE')).body.error.details[0].path).toBe('querystring.state');
    });
  });

  describe('long poll', () => {
    it('an arrive from another request that releases the barrier ends the wait', async () => {
      const id = await create(2);
      await arrive(id, 'a');
      const poll = server.api('GET', `/barriers/${id}?waitMs=20000`);
      await parked();
      expect((await arrive(id, 'b')).body).toMatchObject({ state: 'RELEASED' });
      const res = await poll;
      expect(res.statusCode).toBe(200);
      expect(res.body).toMatchObject({ id, state: 'RELEASED', arrivals: 2 });
    });

    it('a non-releasing arrival does not end the wait; the releasing one does', async () => {
      const id = await create(3);
      const poll = server.api('GET', `/barriers/${id}?waitMs=20000`);
      let answered = false;
      void poll.then(() => (answered = true));
      await parked();
      await arrive(id, 'a');
      await parked();
      await new Promise((r) => setTimeout(r, 50));
      expect(answered).toBe(false);
      await arrive(id, 'b');
      await arrive(id, 'c');
      expect((await poll).body).toMatchObject({ state: 'RELEASED', arrivals: 3 });
    });

    it('answers WAITING when the wait runs out on the clock, capped at 30 s', async () => {
      const id = await create(2);
      const poll = server.api('GET', `/barriers/${id}?waitMs=5000`);
      await parked();
      server.clock.advance(5_000);
      expect((await poll).body).toMatchObject({ id, state: 'WAITING', arrivals: 0 });

      const capped = server.api('GET', `/barriers/${id}?waitMs=120000`);
      let answered = false;
      void capped.then(() => (answered = true));
      await parked();
      server.clock.advance(29_999);
      await new Promise((r) => setTimeout(r, 50));
      expect(answered).toBe(false);
      server.clock.advance(1);
      expect((await capped).statusCode).toBe(200);
    });

    it('answers at once when the barrier is not WAITING, or is in another epoch than the one named', async () => {
      const id = await create(1);
      await arrive(id, 'a');
      expect((await server.api('GET', `/barriers/${id}?waitMs=30000`)).body).toMatchObject({ state: 'RELEASED' });
      await server.api('POST', `/barriers/${id}/nextEpoch`);
      expect((await server.api('GET', `/barriers/${id}?waitMs=30000&epoch=1`)).body).toMatchObject({ state: 'WAITING', epoch: 2 });
      const cancelled = await create(2);
      await server.api('POST', `/barriers/${cancelled}/cancel`);
      expect((await server.api('GET', `/barriers/${cancelled}?waitMs=30000`)).body).toMatchObject({ state: 'CANCELLED' });
    });

    it('returns at once when the server starts draining', async () => {
      const draining = await startTestServer(store, { seed: 11 });
      const id = await create(2, draining);
      const poll = draining.api('GET', `/barriers/${id}?waitMs=30000`);
      await parked(draining);
      const closed = draining.close();
      const res = await poll;
      expect(res.statusCode).toBe(200);
      expect(res.body).toMatchObject({ id, state: 'WAITING' });
      await closed;
      expect((draining.baton.deps.notifier as LocalNotifier).parked).toBe(0);
    });
  });
});

/** A barrier's events once `count` are visible (on PostgreSQL a commit shows once older writers end). */
async function barrierEvents(server: TestServer, id: string, count: number): Promise<any[]> {
  const mine = (all: any[]) => all.filter((e) => e.aggregate.type === 'barrier' && e.aggregate.id === id);
  return mine(await allEvents(server, (all) => mine(all).length >= count));
}
