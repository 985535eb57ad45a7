import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { expectPagingOfFive, type Page } from '../support/paging';
import type { Store } from '@baton/core';
import { allEvents, idem, openTestServer, startTestServer, type Reply, type TestServer } from '../support/server';

const scopeId = '11111111-1111-4111-8111-111111111111';
const otherId = '22222222-2222-4222-8222-222222222222';
const budgetBody = { name: 'llm-spend', currency: 'USD', scale: 2, limitMinor: '10000' };

describe.each(storeTargets())('budgets over HTTP on $name', (target) => {
  let server: TestServer;
  let store: Store;
  let close: () => Promise<void>;
  let budgetId: string;

  beforeAll(async () => {
    ({ server, store, close } = await openTestServer(target));
    const created = await server.api('POST', '/budgets', { body: budgetBody, idem: idem() });
    expect(created.statusCode).toBe(201);
    budgetId = created.body.id;
  });
  afterAll(async () => close());

  const reserve = (amountMinor: string, extra: Record<string, unknown> = {}) =>
    server.api('POST', `/budgets/${budgetId}/reserve`, { body: { scopeId, holder: 'worker-1', amountMinor, ...extra }, idem: idem() });

  describe('POST /budgets', () => {
    it('creates a budget with its balances: 201', async () => {
      const res = await server.api('POST', '/budgets', { body: { name: 'fresh', currency: 'EUR', scale: 0, limitMinor: '999999999999999999' }, idem: idem() });
      expect(res.statusCode).toBe(201);
      expect(res.body).toMatchObject({ name: 'fresh', currency: 'EUR', scale: 0, limitMinor: '999999999999999999', availableMinor: '999999999999999999', reservedMinor: '0', settledMinor: '0', reservations: [] });
      expect(res.headers['x-request-id']).toBeTruthy();
    });

    it('a repeat create with identical settings returns the existing budget: 200', async () => {
      const res = await server.api('POST', '/budgets', { body: budgetBody, idem: idem() });
      expect(res.statusCode).toBe(200);
      expect(res.body.id).toBe(budgetId);
    });

    it('the same name with other settings is CONFLICT', async () => {
      const res = await server.api('POST', '/budgets', { body: { ...budgetBody, limitMinor: '5' }, idem: idem() });
      expect(res.statusCode).toBe(409);
      expect(res.body.error.code).toBe('CONFLICT');
    });

    it.each([
      [{ ...budgetBody, currency: 'US' }, 'body.currency'],
      [{ ...budgetBody, currency: 'U5D' }, 'body.currency'],
      [{ ...budgetBody, scale: 10 }, 'body.scale'],
      [{ ...budgetBody, scale: 1.5 }, 'body.scale'],
      [{ ...budgetBody, limitMinor: '1234567890123456789' }, 'body.limitMinor'],
      [{ ...budgetBody, limitMinor: '-5' }, 'body.limitMinor'],
      [{ ...budgetBody, limitMinor: 100 }, 'body.limitMinor'],
      [{ currency: 'USD', scale: 2, limitMinor: '1' }, 'body.name'],
      [{ ...budgetBody, name: 'nul\u0000name' }, 'body.name'],
    ])('rejects %j with VALIDATION_FAILED naming %s', async (body, path) => {
      const res = await server.api('POST', '/budgets', { body, idem: idem() });
      expect(res.statusCode).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
      expect(res.body.error.requestId).toBe(res.headers['x-request-id']);
    });

    it('without Idempotency-Key is IDEMPOTENCY_KEY_REQUIRED', async () => {
      const res = await server.api('POST', '/budgets', { body: { ...budgetBody, name: 'no-key' } });
      expect(res.statusCode).toBe(400);
      expect(res.body.error.code).toBe('IDEMPOTENCY_KEY_REQUIRED');
    });

    it('a key without resource_config gets FORBIDDEN for a new budget but may repeat an identical create', async () => {
      const worker = await server.newKey({ permissions: ['coordination_read', 'coordination_write'] });
      const missing = await server.api('POST', '/budgets', { key: worker, body: { ...budgetBody, name: 'not-there' }, idem: idem() });
      expect(missing.statusCode).toBe(403);
      expect(missing.body.error).toMatchObject({ code: 'FORBIDDEN', message: 'credential lacks resource_config' });
      const repeat = await server.api('POST', '/budgets', { key: worker, body: budgetBody, idem: idem() });
      expect(repeat.statusCode).toBe(200);
      expect(repeat.body.id).toBe(budgetId);
    });
  });

  describe('GET /budgets and /budgets/{id}', () => {
    it('lists budgets by name, paging with limit and cursor', async () => {
      for (const name of ['page-a', 'page-b', 'page-c']) {
        await server.api('POST', '/budgets', { body: { ...budgetBody, name }, idem: idem() });
      }
      const all: string[] = [];
      let cursor: string | null = null;
      do {
        const query: string = cursor ? `?limit=2&cursor=${cursor}` : '?limit=2';
        const page = await server.api('GET', `/budgets${query}`);
        expect(page.statusCode).toBe(200);
        expect(page.body.items.length).toBeLessThanOrEqual(2);
        all.push(...page.body.items.map((b: { name: string }) => b.name));
        cursor = page.body.nextCursor;
      } while (cursor);
      expect(all).toEqual([...all].sort());
      expect(all).toEqual(expect.arrayContaining(['llm-spend', 'page-a', 'page-b', 'page-c']));
      expect(new Set(all).size).toBe(all.length);
    });

    it('rejects a bad limit or cursor with VALIDATION_FAILED', async () => {
      expect((await server.api('GET', '/budgets?limit=501')).body.error.code).toBe('VALIDATION_FAILED');
      expect((await server.api('GET', '/budgets?limit=0')).body.error.code).toBe('VALIDATION_FAILED');
      expect((await server.api('GET', '/budgets?cursor=%%%')).body.error.code).toBe('VALIDATION_FAILED');
      const nulName = Buffer.from('a\u0000b').toString('base64url');
      expect((await server.api('GET', `/budgets?cursor=${nulName}`)).body.error.code).toBe('VALIDATION_FAILED');
    });

    it('shows one budget; an unknown id is NOT_FOUND; a malformed id is VALIDATION_FAILED', async () => {
      const ok = await server.api('GET', `/budgets/${budgetId}`);
      expect(ok.statusCode).toBe(200);
      expect(ok.body).toMatchObject({ id: budgetId, limitMinor: '10000' });
      const missing = await server.api('GET', `/budgets/${otherId}`);
      expect(missing.statusCode).toBe(404);
      expect(missing.body.error.code).toBe('NOT_FOUND');
      expect((await server.api('GET', '/budgets/not-a-uuid')).statusCode).toBe(400);
    });
  });

  describe('reserve', () => {
    it('reserves: 201 with an ACTIVE reservation, and the budget shows it', async () => {
      const res = await reserve('1000', { settleBy: '2026-01-01T01:00:00.000Z' });
      expect(res.statusCode).toBe(201);
      expect(res.body).toMatchObject({ budgetId, scopeId, holder: 'worker-1', amountMinor: '1000', settledMinor: '0', remainingMinor: '1000', state: 'ACTIVE', settleBy: '2026-01-01T01:00:00.000Z' });
      const view = await server.api('GET', `/budgets/${budgetId}`);
      expect(view.body.reservations.map((r: { id: string }) => r.id)).toContain(res.body.id);
    });

    it('takes a UUID of any version and any case, and reads ids case-insensitively', async () => {
      const res = await server.api('POST', `/budgets/${budgetId.toUpperCase()}/reserve`, { body: { scopeId: '00000000-0000-0000-0000-0000000000AB', holder: 'w', amountMinor: '1' }, idem: idem() });
      expect(res.statusCode).toBe(201);
      expect(res.body).toMatchObject({ budgetId, scopeId: '00000000-0000-0000-0000-0000000000ab' });
      expect((await server.api('GET', `/budgets/${budgetId.toUpperCase()}`)).statusCode).toBe(200);
    });

    it('beyond available is INSUFFICIENT_BUDGET (409)', async () => {
      const res = await reserve('99999999');
      expect(res.statusCode).toBe(409);
      expect(res.body.error.code).toBe('INSUFFICIENT_BUDGET');
    });

    it.each([
      [{ scopeId, holder: 'w', amountMinor: '0' }, 'body.amountMinor'],
      [{ scopeId, holder: 'w', amountMinor: '1.5' }, 'body.amountMinor'],
      [{ scopeId: 'nope', holder: 'w', amountMinor: '1' }, 'body.scopeId'],
      [{ scopeId, amountMinor: '1' }, 'body.holder'],
      [{ scopeId, holder: 'w\u0000', amountMinor: '1' }, 'body.holder'],
      [{ scopeId, holder: 'w', amountMinor: '1', settleBy: 'tomorrow' }, 'body.settleBy'],
    ])('rejects %j naming %s', async (body, path) => {
      const res = await server.api('POST', `/budgets/${budgetId}/reserve`, { body, idem: idem() });
      expect(res.statusCode).toBe(400);
      expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    });

    it('an unknown budget is NOT_FOUND', async () => {
      const res = await server.api('POST', `/budgets/${otherId}/reserve`, { body: { scopeId, holder: 'w', amountMinor: '1' }, idem: idem() });
      expect(res.statusCode).toBe(404);
    });

    it('a read-only key is FORBIDDEN with the permission named', async () => {
      const reader = await server.newKey({ permissions: ['coordination_read'] });
      const res = await server.api('POST', `/budgets/${budgetId}/reserve`, { key: reader, body: { scopeId, holder: 'w', amountMinor: '1' }, idem: idem() });
      expect(res.statusCode).toBe(403);
      expect(res.body.error.message).toBe('credential lacks coordination_write');
    });

    it('a resource_config key may reserve, settle and void (docs/api.md "Versioning")', async () => {
      const config = await server.newKey({ permissions: ['resource_config'] });
      const res = await server.api('POST', `/budgets/${budgetId}/reserve`, { key: config, body: { scopeId, holder: 'w', amountMinor: '1' }, idem: idem() });
      expect(res.statusCode).toBe(201);
      const voided = await server.api('POST', `/budgets/${budgetId}/void`, { key: config, body: { reservationId: res.body.id, workKey: 'cfg-void' } });
      expect(voided.statusCode).toBe(200);
    });
  });

  describe('settle and void', () => {
    it('settles partially, replays per workKey, over-settles from available, then refuses a closed reservation', async () => {
      const before = (await server.api('GET', `/budgets/${budgetId}`)).body;
      const r = (await reserve('500')).body;
      const first = await server.api('POST', `/budgets/${budgetId}/settle`, { body: { reservationId: r.id, amountMinor: '200', workKey: 'call-1' } });
      expect(first.statusCode).toBe(200);
      expect(first.body).toMatchObject({ replay: false, entry: { kind: 'SETTLE', amountMinor: '200', workKey: 'call-1', reservationId: r.id }, reservation: { state: 'ACTIVE', remainingMinor: '300', settledMinor: '200' } });

      const again = await server.api('POST', `/budgets/${budgetId}/settle`, { body: { reservationId: r.id, amountMinor: '200', workKey: 'call-1' } });
      expect(again.body).toMatchObject({ replay: true, entry: { id: first.body.entry.id } });
      expect(again.body.budget.settledMinor).toBe(first.body.budget.settledMinor);

      const over = await server.api('POST', `/budgets/${budgetId}/settle`, { body: { reservationId: r.id, amountMinor: '450', workKey: 'call-2' } });
      expect(over.body.reservation).toMatchObject({ state: 'SETTLED', remainingMinor: '0', settledMinor: '650' });
      const b = over.body.budget;
      expect(BigInt(b.availableMinor)).toBe(BigInt(before.availableMinor) - 650n);
      expect(BigInt(b.availableMinor) + BigInt(b.reservedMinor) + BigInt(b.settledMinor)).toBe(BigInt(b.limitMinor));

      const closed = await server.api('POST', `/budgets/${budgetId}/settle`, { body: { reservationId: r.id, amountMinor: '1', workKey: 'call-3' } });
      expect(closed.statusCode).toBe(409);
      expect(closed.body.error).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('SETTLED') });
      const voidClosed = await server.api('POST', `/budgets/${budgetId}/void`, { body: { reservationId: r.id, workKey: 'void-closed' } });
      expect(voidClosed.statusCode).toBe(409);
    });

    it('an over-settle that available cannot cover is INSUFFICIENT_BUDGET', async () => {
      const r = (await reserve('10')).body;
      const res = await server.api('POST', `/budgets/${budgetId}/settle`, { body: { reservationId: r.id, amountMinor: '99999999', workKey: 'too-much' } });
      expect(res.statusCode).toBe(409);
      expect(res.body.error.code).toBe('INSUFFICIENT_BUDGET');
    });

    it('a workKey reused for another amount or reservation is CONFLICT', async () => {
      const r = (await reserve('10')).body;
      await server.api('POST', `/budgets/${budgetId}/settle`, { body: { reservationId: r.id, amountMinor: '1', workKey: 'wk-reuse' } });
      const res = await server.api('POST', `/budgets/${budgetId}/settle`, { body: { reservationId: r.id, amountMinor: '2', workKey: 'wk-reuse' } });
      expect(res.statusCode).toBe(409);
      expect(res.body.error.code).toBe('CONFLICT');
    });

    it('voids the remainder, replays the void, and a reservation of another budget is NOT_FOUND', async () => {
      const r = (await reserve('300')).body;
      await server.api('POST', `/budgets/${budgetId}/settle`, { body: { reservationId: r.id, amountMinor: '100', workKey: 'v-settle' } });
      const voided = await server.api('POST', `/budgets/${budgetId}/void`, { body: { reservationId: r.id, workKey: 'v-void' } });
      expect(voided.statusCode).toBe(200);
      expect(voided.body).toMatchObject({ replay: false, entry: { kind: 'VOID', amountMinor: '200' }, reservation: { state: 'VOIDED', remainingMinor: '0', settledMinor: '100' } });
      const replay = await server.api('POST', `/budgets/${budgetId}/void`, { body: { reservationId: r.id, workKey: 'v-void' } });
      expect(replay.body).toMatchObject({ replay: true, entry: { id: voided.body.entry.id } });

      const other = await server.api('POST', '/budgets', { body: { ...budgetBody, name: 'other' }, idem: idem() });
      const wrong = await server.api('POST', `/budgets/${other.body.id}/void`, { body: { reservationId: r.id, workKey: 'x' } });
      expect(wrong.statusCode).toBe(404);
    });

    it.each([
      ['settle', { reservationId: otherId, amountMinor: '1' }, 'body.workKey'],
      ['settle', { reservationId: otherId, amountMinor: '1', workKey: '' }, 'body.workKey'],
      ['settle', { reservationId: otherId, amountMinor: '1', workKey: 'k'.repeat(513) }, 'body.workKey'],
      ['settle', { reservationId: 'x', amountMinor: '1', workKey: 'k' }, 'body.reservationId'],
      ['void', { workKey: 'k' }, 'body.reservationId'],
      ['void', { reservationId: otherId, workKey: 'a\u0000b' }, 'body.workKey'],
    ])('%s rejects %j naming %s', async (verb, body, path) => {
      const res = await server.api('POST', `/budgets/${budgetId}/${verb}`, { body });
      expect(res.statusCode).toBe(400);
      expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    });
  });

  describe('GET /budgets/{id}/reservations and /reservations/{reservationId}', () => {
    it('reaches every reservation in any state, oldest first, filtered by state and paged', async () => {
      const fresh = (await server.api('POST', '/budgets', { body: { ...budgetBody, name: 'listed' }, idem: idem() })).body.id as string;
      // A millisecond apart: reservations made in one millisecond are ordered by id.
      const reserveOn = async (amountMinor: string) => {
        server.clock.advance(1);
        return (await server.api('POST', `/budgets/${fresh}/reserve`, { body: { scopeId, holder: 'lister', amountMinor }, idem: idem() })).body.id as string;
      };
      const settled = await reserveOn('100');
      const voided = await reserveOn('200');
      const active = await reserveOn('300');
      await server.api('POST', `/budgets/${fresh}/settle`, { body: { reservationId: settled, amountMinor: '100', workKey: 'l-settle' } });
      await server.api('POST', `/budgets/${fresh}/void`, { body: { reservationId: voided, workKey: 'l-void' } });

      const all = await server.api('GET', `/budgets/${fresh}/reservations`);
      expect(all.statusCode).toBe(200);
      expect(all.body.items.map((r: { id: string; state: string }) => [r.id, r.state])).toEqual([[settled, 'SETTLED'], [voided, 'VOIDED'], [active, 'ACTIVE']]);
      expect(all.body.nextCursor).toBeNull();
      const closed = await server.api('GET', `/budgets/${fresh}/reservations?state=SETTLED,VOIDED`);
      expect(closed.body.items.map((r: { id: string }) => r.id)).toEqual([settled, voided]);
      const first = await server.api('GET', `/budgets/${fresh}/reservations?limit=2`);
      expect(first.body.items).toHaveLength(2);
      const second = await server.api('GET', `/budgets/${fresh}/reservations?limit=2&cursor=${first.body.nextCursor}`);
      expect(second.body).toEqual({ items: [all.body.items[2]], nextCursor: null });
      // The budget view keeps listing the ACTIVE ones only.
      expect((await server.api('GET', `/budgets/${fresh}`)).body.reservations.map((r: { id: string }) => r.id)).toEqual([active]);

      const one = await server.api('GET', `/budgets/${fresh}/reservations/${voided}`);
      expect(one.statusCode).toBe(200);
      expect(one.body).toEqual(all.body.items[1]);
      expect(one.body).toMatchObject({ budgetId: fresh, state: 'VOIDED', amountMinor: '200', remainingMinor: '0' });
    });

    it('answers 404 for an unknown budget or a reservation of another budget, 400 for a bad state or id', async () => {
      const r = (await reserve('1')).body.id as string;
      const other = (await server.api('POST', '/budgets', { body: { ...budgetBody, name: 'not-its-budget' }, idem: idem() })).body.id as string;
      expect((await server.api('GET', `/budgets/${other}/reservations/${r}`)).body.error).toMatchObject({ code: 'NOT_FOUND', message: 'reservation not found' });
      expect((await server.api('GET', `/budgets/${otherId}/reservations`)).body.error).toMatchObject({ code: 'NOT_FOUND', message: 'budget not found' });
      expect((await server.api('GET', `/budgets/${budgetId}/reservations/${otherId}`)).statusCode).toBe(404);
      const badState = await server.api('GET', `/budgets/${budgetId}/reservations?state=OPEN`);
      expect([badState.statusCode, badState.body.error.details[0].path]).toEqual([400, 'querystring.state']);
      expect((await server.api('GET', `/budgets/${budgetId}/reservations/not-a-uuid`)).statusCode).toBe(400);
      expect((await server.api('GET', `/budgets/${budgetId}/reservations?cursor=%%%`)).statusCode).toBe(400);
    });
  });

  describe('settleBy', () => {
    it('passing settleBy emits budget.reservation_overdue once and voids nothing', async () => {
      const r = (await reserve('5', { settleBy: new Date(server.clock.now() + 60_000).toISOString() })).body;
      const advanced = await server.admin('POST', '/clock/advance', { ms: 61_000 });
      expect(advanced.statusCode).toBe(200);
      await server.admin('POST', '/clock/advance', { ms: 61_000 });
      const events = await allEvents(server, (all) => all.some((e) => e.type === 'budget.reservation_overdue' && e.data.reservationId === r.id));
      const overdue = events.filter((e) => e.type === 'budget.reservation_overdue' && e.data.reservationId === r.id);
      expect(overdue).toHaveLength(1);
      expect(overdue[0]).toMatchObject({ aggregate: { type: 'budget', id: budgetId }, scopeId });
      const view = await server.api('GET', `/budgets/${budgetId}`);
      expect(view.body.reservations.find((x: { id: string }) => x.id === r.id)?.state).toBe('ACTIVE');
    });
  });

  describe('what the service decides beyond the rules', () => {
    const post = (path: string, body: unknown) => server.api('POST', path, { body, idem: idem() });
    const newBudget = async (name: string, limitMinor = '10000') => (await post('/budgets', { ...budgetBody, name, limitMinor })).body.id as string;
    const reserveOn = async (budget: string, amountMinor: string, extra: Record<string, unknown> = {}) => {
      const res = await post(`/budgets/${budget}/reserve`, { scopeId, holder: 'decider', amountMinor, ...extra });
      expect(res.statusCode).toBe(201);
      return res.body.id as string;
    };
    const entry = (budget: string, verb: 'settle' | 'void', body: Record<string, unknown>) => server.api('POST', `/budgets/${budget}/${verb}`, { body });

    it('journals budget.created, budget.reserved, budget.settled and budget.voided, each with the budget as aggregate and what it changed', async () => {
      const journaled = await newBudget('journaled');
      const settleBy = new Date(server.clock.now() + 3_600_000).toISOString();
      const r = await reserveOn(journaled, '300', { settleBy });
      const plain = await reserveOn(journaled, '100');
      const settled = await entry(journaled, 'settle', { reservationId: r, amountMinor: '100', workKey: 'j-settle' });
      const voided = await entry(journaled, 'void', { reservationId: r, workKey: 'j-void' });
      const events = (await allEvents(server, (all) => all.some((e) => e.type === 'budget.voided' && e.aggregate.id === journaled))).filter((e) => e.aggregate.id === journaled);
      expect(events.map((e) => [e.type, e.aggregate.type, e.scopeId])).toEqual([
        ['budget.created', 'budget', null],
        ['budget.reserved', 'budget', scopeId],
        ['budget.reserved', 'budget', scopeId],
        ['budget.settled', 'budget', scopeId],
        ['budget.voided', 'budget', scopeId],
      ]);
      expect(events[0].data).toEqual({ name: 'journaled', currency: 'USD', scale: 2, limitMinor: '10000' });
      expect(events[1].data).toEqual({ reservationId: r, holder: 'decider', amountMinor: '300', settleBy });
      expect(events[2].data).toEqual({ reservationId: plain, holder: 'decider', amountMinor: '100', settleBy: null });
      expect(events[3].data).toEqual({ entryId: settled.body.entry.id, reservationId: r, amountMinor: '100', workKey: 'j-settle', reservationState: 'ACTIVE' });
      expect(events[4].data).toEqual({ entryId: voided.body.entry.id, reservationId: r, amountMinor: '200', workKey: 'j-void', reservationState: 'VOIDED' });
    });

    it('a create of an existing name is a repeat only with the same currency, scale and limit: any one of them differing is CONFLICT', async () => {
      const body = { name: 'settings', currency: 'USD', scale: 2, limitMinor: '1000' };
      expect((await post('/budgets', body)).statusCode).toBe(201);
      expect((await post('/budgets', body)).statusCode).toBe(200);
      for (const other of [{ currency: 'EUR' }, { scale: 3 }, { limitMinor: '1001' }]) {
        const res = await post('/budgets', { ...body, ...other });
        expect([other, res.statusCode, res.body.error]).toEqual([other, 409, expect.objectContaining({ code: 'CONFLICT', message: 'budget settings exists with other settings' })]);
      }
    });

    it('names what is missing: the budget (read, reserve, settle, void) or the reservation', async () => {
      const r = (await reserve('1')).body.id as string;
      const missing = (res: Reply) => res.body.error as { code: string; message: string };
      expect(missing(await server.api('GET', `/budgets/${otherId}`))).toMatchObject({ code: 'NOT_FOUND', message: 'budget not found' });
      expect(missing(await post(`/budgets/${otherId}/reserve`, { scopeId, holder: 'w', amountMinor: '1' }))).toMatchObject({ code: 'NOT_FOUND', message: 'budget not found' });
      // The reservation exists, of another budget: the missing budget is what is named.
      expect(missing(await entry(otherId, 'settle', { reservationId: r, amountMinor: '1', workKey: 'nf-settle' }))).toMatchObject({ code: 'NOT_FOUND', message: 'budget not found' });
      expect(missing(await entry(otherId, 'void', { reservationId: r, workKey: 'nf-void' }))).toMatchObject({ code: 'NOT_FOUND', message: 'budget not found' });
      expect(missing(await entry(budgetId, 'void', { reservationId: otherId, workKey: 'nf-reservation' }))).toMatchObject({ code: 'NOT_FOUND', message: 'reservation not found' });
      expect((await entry(budgetId, 'void', { reservationId: r, workKey: 'nf-cleanup' })).statusCode).toBe(200);
    });

    it('a workKey replays only the same kind of entry on the same reservation: a void or another reservation under it is CONFLICT', async () => {
      const reused = await newBudget('reused');
      const r = await reserveOn(reused, '10');
      const r2 = await reserveOn(reused, '10');
      expect((await entry(reused, 'settle', { reservationId: r, amountMinor: '1', workKey: 'wk-kind' })).statusCode).toBe(200);
      const asVoid = await entry(reused, 'void', { reservationId: r, workKey: 'wk-kind' });
      expect(asVoid.body.error).toEqual(expect.objectContaining({ code: 'CONFLICT', message: `workKey wk-kind was already used for a SETTLE of 1 on reservation ${r}` }));
      const elsewhere = await entry(reused, 'settle', { reservationId: r2, amountMinor: '1', workKey: 'wk-kind' });
      expect(elsewhere.body.error).toMatchObject({ code: 'CONFLICT' });
      expect((await server.api('GET', `/budgets/${reused}/reservations/${r2}`)).body).toMatchObject({ state: 'ACTIVE', settledMinor: '0' });
    });

    it("an entry's reply shows the budget's ACTIVE reservations after it: the changed one as it is now, a closed one gone, the others as they were", async () => {
      const shown = await newBudget('shown');
      server.clock.advance(1);
      const r1 = await reserveOn(shown, '500');
      server.clock.advance(1);
      const r2 = await reserveOn(shown, '300');
      const listed = (res: Reply) => (res.body.budget.reservations as { id: string; remainingMinor: string; state: string }[]).map((r) => [r.id, r.remainingMinor, r.state]);
      const partly = await entry(shown, 'settle', { reservationId: r1, amountMinor: '100', workKey: 'shown-1' });
      expect(listed(partly)).toEqual([[r1, '400', 'ACTIVE'], [r2, '300', 'ACTIVE']]);
      const closed = await entry(shown, 'void', { reservationId: r2, workKey: 'shown-2' });
      expect(listed(closed)).toEqual([[r1, '400', 'ACTIVE']]);
      const settled = await entry(shown, 'settle', { reservationId: r1, amountMinor: '400', workKey: 'shown-3' });
      expect(listed(settled)).toEqual([]);
      expect((await server.api('GET', `/budgets/${shown}`)).body.reservations).toEqual([]);
    });

    it('pages budgets and reservations: a page holds at most limit items, its cursor continues after the last, and a page that ends the list has none', async () => {
      // A space of its own, so other tests' budgets do not show.
      const own = await startTestServer(store, { seed: 11 });
      try {
        const names = ['p-a', 'p-b', 'p-c', 'p-d', 'p-e'];
        for (const name of names) expect((await own.api('POST', '/budgets', { body: { ...budgetBody, name }, idem: idem() })).statusCode).toBe(201);
        const budgets = async (query: string) => (await own.api('GET', `/budgets?${query}`)).body as Page<{ id: string; name: string }>;
        await expectPagingOfFive(budgets, names, (b) => b.name);

        const budget = (await budgets('limit=1')).items[0]!.id;
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) {
          own.clock.advance(1);
          ids.push((await own.api('POST', `/budgets/${budget}/reserve`, { body: { scopeId, holder: 'pager', amountMinor: '1' }, idem: idem() })).body.id);
        }
        await expectPagingOfFive(async (query) => (await own.api('GET', `/budgets/${budget}/reservations?${query}`)).body as Page<{ id: string }>, ids, (r) => r.id);
      } finally {
        await own.close();
      }
    });
  });
});
