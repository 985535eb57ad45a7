import type { LocalNotifier, Store } from '@baton/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { allEvents, idem, startTestServer, type Reply, type TestServer } from '../support/server';

/**
 * POST /tasks/admit (docs/design/0009-pools-and-work-limits.md, docs/api.md "Admission"). Every test
 * makes its own mailbox and resources, so what one test claims never blocks another; the
 * server's clock is manual and only moves when a test moves it.
 */

const scopeId = '11111111-1111-4111-8111-111111111111';
const otherScope = '33333333-3333-4333-8333-333333333333';
const unknownId = '22222222-2222-4222-8222-222222222222';

type Kind = 'pool' | 'quota' | 'budget' | 'workLimit';

describe.each(storeTargets())('admission over HTTP on $name', (target) => {
  let server: TestServer;
  let store: Store;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const opened = await target.open();
    store = opened.store;
    server = await startTestServer(store);
    close = async () => {
      await server.close();
      await opened.close();
    };
  });
  afterAll(async () => close());

  let counter = 0;

  const created = async (path: string, body: Record<string, unknown>, at: TestServer = server): Promise<string> => {
    const res = await at.api('POST', path, { body, idem: idem() });
    expect(res.statusCode, `${path} ${JSON.stringify(res.body)}`).toBe(201);
    return res.body.id as string;
  };

  /** A fresh mailbox with one pool, work limit, allowance and budget of its own. */
  const fixture = async (o: { capacity?: number; maxConcurrent?: number; unitsLimit?: number; windowSeconds?: number; limitMinor?: string } = {}) => {
    const tag = `${++counter}`;
    const names = { pool: `gpu-${tag}`, workLimit: `wl-${tag}`, quota: `q-${tag}`, budget: `spend-${tag}` };
    const box = await created('/mailboxes', { name: `box-${tag}` });
    const poolId = await created('/pools', { name: names.pool, capacity: o.capacity ?? 2 });
    const workLimitId = await created('/work-limits', { name: names.workLimit, maxConcurrent: o.maxConcurrent ?? 3 });
    const quotaId = await created('/allowances', { name: names.quota, unitsLimit: o.unitsLimit ?? 10, windowSeconds: o.windowSeconds ?? 3600 });
    const budgetId = await created('/budgets', { name: names.budget, currency: 'USD', scale: 2, limitMinor: o.limitMinor ?? '10000' });
    let task = 0;
    const submit = async (extra: Record<string, unknown> = {}): Promise<string> => {
      const res = await server.api('POST', '/tasks', { body: { scopeId, mailboxId: box, taskKey: `t-${tag}-${++task}`, input: { n: task }, ...extra }, idem: idem() });
      expect(res.statusCode, JSON.stringify(res.body)).toBe(201);
      return res.body.taskId as string;
    };
    const admit = (extra: Record<string, unknown> = {}, opts: { idem?: string | null; key?: string; at?: TestServer } = {}): Promise<Reply> =>
      (opts.at ?? server).api('POST', '/tasks/admit', {
        body: { scopeId, mailboxId: box, holder: 'worker-1', holderSession: 'session-1', ...extra },
        ...(opts.idem === null ? {} : { idem: opts.idem ?? idem() }),
        ...(opts.key === undefined ? {} : { key: opts.key }),
      });
    /** All four kinds, sized by `units` (pool and quota units, budget minor units). */
    const all = (units = { pool: 1, quota: 3, budget: '400' }, kinds: Kind[] = ['pool', 'quota', 'budget', 'workLimit']) => ({
      requirements: {
        pools: kinds.includes('pool') ? [{ name: names.pool, units: units.pool }] : [],
        quotas: kinds.includes('quota') ? [{ name: names.quota, units: units.quota }] : [],
        budgets: kinds.includes('budget') ? [{ name: names.budget, reserveMinor: units.budget }] : [],
      },
      ...(kinds.includes('workLimit') ? { workLimit: names.workLimit } : {}),
    });
    const pool = async () => (await server.api('GET', `/pools/${poolId}`)).body;
    const workLimit = async () => (await server.api('GET', `/work-limits/${workLimitId}`)).body;
    const quota = async () => (await server.api('GET', `/allowances/${quotaId}`)).body;
    const budget = async () => (await server.api('GET', `/budgets/${budgetId}`)).body;
    /** inUse, usedUnits and reservedMinor in one object, for before/after comparisons. */
    const usage = async () => ({ pool: (await pool()).inUse, workLimit: (await workLimit()).inUse, quota: (await quota()).usedUnits, reserved: (await budget()).reservedMinor });
    return { tag, names, box, poolId, workLimitId, quotaId, budgetId, submit, admit, all, pool, workLimit, quota, budget, usage };
  };

  const task = async (id: string) => (await server.api('GET', `/tasks/${id}`)).body;
  const messages = async (box: string) => (await server.api('GET', `/mailboxes/${box}/messages`)).body.items;
  const call = (messageId: string, verb: 'renew' | 'complete' | 'nack', body: Record<string, unknown>) => server.api('POST', `/messages/${messageId}/${verb}`, { body });
  const settle = (budgetId: string, reservationId: string, amountMinor: string) =>
    server.api('POST', `/budgets/${budgetId}/settle`, { body: { reservationId, amountMinor, workKey: `settle-${reservationId}-${amountMinor}` } });
  const advance = (ms: number) => server.admin('POST', '/clock/advance', { ms });
  /** Resolves once at least `n` long-poll waits are parked on the notifier. */
  const parked = async (n = 1, at: TestServer = server): Promise<void> => {
    const notifier = at.baton.deps.notifier as LocalNotifier;
    await expect.poll(() => notifier.parked, { timeout: 5_000, interval: 5 }).toBeGreaterThanOrEqual(n);
    // Let the poll finish the read it may be in before the test acts.
    await new Promise((r) => setTimeout(r, 20));
  };
  /** Resolves once a long poll has armed its clock wake-up for `atMs` (the earliest timer on the manual clock). */
  const timeWakeAt = async (atMs: number, at: TestServer = server): Promise<void> => {
    await expect.poll(() => at.clock.nextTimerMs(), { timeout: 5_000, interval: 5 }).toBe(atMs);
  };
  const expectError = (res: Reply, status: number, code: string): void => {
    expect(res.statusCode, JSON.stringify(res.body)).toBe(status);
    expect(res.body.error.code).toBe(code);
  };
  const eventsOf = async (ready: (events: any[]) => boolean) => allEvents(server, ready);

  describe('order and claims', () => {
    it('admits the oldest READY task delivery first (FIFO), then answers 204', async () => {
      const f = await fixture();
      const ids = [await f.submit(), await f.submit(), await f.submit()];
      const got: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await f.admit();
        expect(res.statusCode).toBe(200);
        got.push(res.body.taskId);
      }
      expect(got).toEqual(ids);
      const empty = await f.admit();
      expect(empty.statusCode).toBe(204);
      expect(empty.body).toBeUndefined();
    });

    it('admits a task without requirements in one step, with nothing claimed', async () => {
      const f = await fixture();
      const taskId = await f.submit({ input: { job: 'plain' } });
      const res = await f.admit({ leaseSeconds: 45, holder: 'worker-7', holderSession: 'session-7' });
      expect(res.statusCode).toBe(200);
      expect(res.body).toEqual({
        messageId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        mailboxId: f.box,
        taskId,
        token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        leaseExpiresAt: new Date(server.clock.now() + 45_000).toISOString(),
        attempt: 1,
        payload: { taskId, input: { job: 'plain' } },
        scopeId,
        workKey: null,
        claimed: { pools: [], quotas: [], budgets: [], workLimit: null },
      });
      expect(await task(taskId)).toMatchObject({ state: 'RUNNING', attempts: 1 });
      const [message] = await messages(f.box);
      expect(message).toMatchObject({ id: res.body.messageId, state: 'CLAIMED', attempt: 1, holder: 'worker-7', holderSession: 'session-7', leaseExpiresAt: res.body.leaseExpiresAt });
      expect(await f.usage()).toEqual({ pool: 0, workLimit: 0, quota: 0, reserved: '0' });
    });

    it('claims every kind of resource, in name order, and each read shows it', async () => {
      const f = await fixture();
      const second = `${f.names.pool}-b`;
      await created('/pools', { name: second, capacity: 5 });
      const taskId = await f.submit({
        requirements: {
          pools: [{ name: second, units: 3 }, { name: f.names.pool, units: 2 }],
          quotas: [{ name: f.names.quota, units: 4 }],
          budgets: [{ name: f.names.budget, reserveMinor: '750' }],
        },
        workLimit: f.names.workLimit,
      });
      const res = await f.admit();
      expect(res.statusCode).toBe(200);
      expect(res.body.taskId).toBe(taskId);
      expect(res.body.claimed).toEqual({
        pools: [{ name: f.names.pool, units: 2 }, { name: second, units: 3 }],
        quotas: [{ name: f.names.quota, units: 4 }],
        budgets: [{ name: f.names.budget, reservationId: expect.stringMatching(/^[0-9a-f-]{36}$/), amountMinor: '750' }],
        workLimit: f.names.workLimit,
      });
      // GET /pools and GET /work-limits (the lists) show what is in use.
      const pools = (await server.api('GET', '/pools?limit=500')).body.items;
      expect(pools.find((p: { name: string }) => p.name === f.names.pool)).toMatchObject({ capacity: 2, inUse: 2, available: 0 });
      expect(pools.find((p: { name: string }) => p.name === second)).toMatchObject({ capacity: 5, inUse: 3, available: 2 });
      const limits = (await server.api('GET', '/work-limits?limit=500')).body.items;
      expect(limits.find((w: { name: string }) => w.name === f.names.workLimit)).toMatchObject({ maxConcurrent: 3, inUse: 1, available: 2 });
      expect(await f.quota()).toMatchObject({ usedUnits: 4, availableUnits: 6 });
      const budget = await f.budget();
      expect(budget).toMatchObject({ limitMinor: '10000', reservedMinor: '750', availableMinor: '9250', settledMinor: '0' });
      expect(budget.reservations).toEqual([
        expect.objectContaining({ id: res.body.claimed.budgets[0].reservationId, holder: 'worker-1', scopeId, amountMinor: '750', remainingMinor: '750', state: 'ACTIVE' }),
      ]);
    });

    it.each<Kind>(['pool', 'quota', 'budget', 'workLimit'])(
      'passes over a candidate whose %s is short, admits the next, and leaves nothing of the passed-over claim',
      async (short) => {
        const f = await fixture({ capacity: 2, maxConcurrent: 1, unitsLimit: 10, windowSeconds: 60, limitMinor: '1000' });
        // The blocker holds all of the short resource and nothing else.
        const blockerUnits = { pool: 2, quota: 10, budget: '1000' };
        const blockerTask = await f.submit(f.all(blockerUnits, [short]));
        const blocker = await f.admit();
        expect(blocker.body.taskId).toBe(blockerTask);
        const before = await f.usage();
        // A needs all four kinds: the ones claimed before the short one must be rolled back.
        const a = await f.submit(f.all());
        const b = await f.submit(f.all(undefined, (['pool', 'quota', 'budget', 'workLimit'] as Kind[]).filter((k) => k !== short)));
        const next = await f.admit();
        expect(next.statusCode).toBe(200);
        expect(next.body.taskId).toBe(b);
        const after = await f.usage();
        // Only B's claims were added to what the blocker held.
        expect(after).toEqual({
          pool: before.pool + (short === 'pool' ? 0 : 1),
          quota: before.quota + (short === 'quota' ? 0 : 3),
          reserved: (BigInt(before.reserved) + (short === 'budget' ? 0n : 400n)).toString(),
          workLimit: before.workLimit + (short === 'workLimit' ? 0 : 1),
        });
        expect(await task(a)).toMatchObject({ state: 'PENDING', attempts: 0 });
        expect((await messages(f.box)).find((m: { payload: { taskId: string } }) => m.payload.taskId === a)).toMatchObject({ state: 'READY', attempt: 0, holder: null });
        // Still nothing admissible: A stays blocked and nothing changed.
        expect((await f.admit()).statusCode).toBe(204);
        expect(await f.usage()).toEqual(after);

        // Once the blocker's claim ends (and B's), A, the oldest, is admitted with everything.
        expect((await call(blocker.body.messageId, 'nack', { token: blocker.body.token, retry: false })).body.state).toBe('DEAD');
        expect((await call(next.body.messageId, 'complete', { token: next.body.token })).statusCode).toBe(200);
        const late = await f.submit();
        if (short === 'quota') {
          // Quota units are spent, not given back: A waits for the window to roll, and younger work goes ahead.
          expect((await f.admit()).body.taskId).toBe(late);
          expect((await f.quota()).usedUnits).toBe(10);
          server.clock.advance(60_000);
        }
        const third = await f.admit();
        expect(third.statusCode).toBe(200);
        expect(third.body.taskId).toBe(a);
        expect(third.body.claimed).toMatchObject({ pools: [{ units: 1 }], quotas: [{ units: 3 }], budgets: [{ amountMinor: '400' }], workLimit: f.names.workLimit });
        if (short !== 'quota') expect((await f.admit()).body.taskId).toBe(late);
      },
    );

    it('a younger candidate asking fewer units of a pool found short is still admitted', async () => {
      const f = await fixture({ capacity: 3 });
      const units = (pool: number) => f.all({ pool, quota: 1, budget: '1' }, ['pool']);
      await f.submit(units(2));
      expect((await f.admit()).statusCode).toBe(200);
      const big = await f.submit(units(2));
      const small = await f.submit(units(1));
      await f.submit(units(2));
      expect((await f.admit()).body.taskId).toBe(small);
      expect((await f.pool()).inUse).toBe(3);
      expect(await task(big)).toMatchObject({ state: 'PENDING' });
    });

    it('a quota with waiters in its line is short for admission too, and the line leaving wakes a long-polling admit', async () => {
      const f = await fixture({ unitsLimit: 10 });
      const consumed = await server.api('POST', `/allowances/${f.quotaId}/consume`, { body: { scopeId, units: 5, holder: 'other' }, idem: idem() });
      expect(consumed.statusCode).toBe(201);
      const waiter = await server.api('POST', `/allowances/${f.quotaId}/wait`, { body: { scopeId, units: 8, holder: 'other' }, idem: idem() });
      expect(waiter.body.state).toBe('WAITING');
      // 2 units fit in the window, but the line's head comes first (strict FIFO).
      const taskId = await f.submit(f.all({ pool: 1, quota: 2, budget: '1' }, ['quota']));
      expect((await f.admit()).statusCode).toBe(204);
      expect((await f.quota()).usedUnits).toBe(5);
      const poll = f.admit({ waitMs: 20_000 });
      await parked(2);
      expect((await server.api('POST', `/allowance-waiters/${waiter.body.id}/cancel`, { body: {} })).statusCode).toBe(200);
      const res = await poll;
      expect(res.statusCode).toBe(200);
      expect(res.body.taskId).toBe(taskId);
      expect((await f.quota()).usedUnits).toBe(7);
    });

    it('admits only task deliveries of the request scope: plain messages are left for recv', async () => {
      const f = await fixture();
      const plain = await server.api('POST', `/mailboxes/${f.box}/messages`, { body: { scopeId, payload: 'plain' }, idem: idem() });
      expect(plain.statusCode).toBe(201);
      const elsewhere = await f.submit({ scopeId: otherScope });
      expect((await f.admit()).statusCode).toBe(204);
      const taskId = await f.submit();
      expect((await f.admit()).body.taskId).toBe(taskId);
      expect((await f.admit({ scopeId: otherScope })).body.taskId).toBe(elsewhere);
      const recv = await server.api('POST', `/mailboxes/${f.box}/recv`, { body: { scopeId, holder: 'r', holderSession: 's' } });
      expect(recv.body).toMatchObject({ messageId: plain.body.id, payload: 'plain' });
    });

    it('concurrent admits never claim more than a pool holds', async () => {
      const f = await fixture({ capacity: 1 });
      await f.submit(f.all({ pool: 1, quota: 1, budget: '1' }, ['pool']));
      await f.submit(f.all({ pool: 1, quota: 1, budget: '1' }, ['pool']));
      const replies = await Promise.all([1, 2, 3, 4].map((i) => f.admit({ holderSession: `s-${i}` })));
      expect(replies.map((r) => r.statusCode).sort()).toEqual([200, 204, 204, 204]);
      expect((await f.pool()).inUse).toBe(1);
    });

    it('examines at most 100 candidates per try', async () => {
      const f = await fixture({ capacity: 1 });
      const hold = await f.submit(f.all({ pool: 1, quota: 1, budget: '1' }, ['pool']));
      expect((await f.admit()).body.taskId).toBe(hold);
      const blocked: string[] = [];
      for (let i = 0; i < 100; i++) blocked.push(await f.submit(f.all({ pool: 1, quota: 1, budget: '1' }, ['pool'])));
      const free = await f.submit();
      // The 101st candidate is admissible but beyond the bound.
      expect((await f.admit()).statusCode).toBe(204);
      await server.api('POST', `/tasks/${blocked[0]}/cancel`, { body: {} });
      expect((await f.admit()).body.taskId).toBe(free);
    });
  });

  describe('release', () => {
    it('complete returns pool units and the slot; the reservation stays ACTIVE for the worker to settle', async () => {
      const f = await fixture();
      const taskId = await f.submit(f.all({ pool: 2, quota: 3, budget: '500' }));
      const d = (await f.admit()).body;
      const reservationId = d.claimed.budgets[0].reservationId;
      expect(await f.usage()).toEqual({ pool: 2, workLimit: 1, quota: 3, reserved: '500' });
      const done = await call(d.messageId, 'complete', { token: d.token, result: { payload: { ok: 1 } } });
      expect(done.body).toEqual({ state: 'ACKED', resultMessageId: null });
      expect(await f.usage()).toEqual({ pool: 0, workLimit: 0, quota: 3, reserved: '500' });
      expect(await task(taskId)).toMatchObject({ state: 'SUCCEEDED', outcome: { ok: 1 } });
      expect((await f.budget()).reservations).toEqual([expect.objectContaining({ id: reservationId, state: 'ACTIVE', holder: 'worker-1' })]);
      const settled = await settle(f.budgetId, reservationId, '500');
      expect(settled.statusCode).toBe(200);
      expect(settled.body.reservation).toMatchObject({ state: 'SETTLED', settledMinor: '500', remainingMinor: '0' });
      expect(await f.budget()).toMatchObject({ reservedMinor: '0', settledMinor: '500', availableMinor: '9500', reservations: [] });
    });

    it('nack with retry returns everything, voids the reservation (workKey delivery:<messageId>:<attempt>), and the task is admitted again as attempt 2', async () => {
      const f = await fixture();
      const taskId = await f.submit(f.all({ pool: 2, quota: 3, budget: '500' }));
      const d = (await f.admit()).body;
      const reservationId = d.claimed.budgets[0].reservationId;
      expect((await call(d.messageId, 'nack', { token: d.token, retry: true })).body).toEqual({ state: 'READY' });
      expect(await f.usage()).toEqual({ pool: 0, workLimit: 0, quota: 3, reserved: '0' });
      expect(await task(taskId)).toMatchObject({ state: 'PENDING', attempts: 1 });
      const refused = await settle(f.budgetId, reservationId, '1');
      expectError(refused, 409, 'CONFLICT');
      expect(refused.body.error.message).toContain('VOIDED');
      const events = await eventsOf((all) => all.some((e) => e.type === 'budget.voided' && e.data.reservationId === reservationId));
      expect(events.find((e) => e.type === 'budget.voided' && e.data.reservationId === reservationId)).toMatchObject({
        aggregate: { type: 'budget', id: f.budgetId },
        data: { amountMinor: '500', workKey: `delivery:${d.messageId}:1`, reservationState: 'VOIDED', messageId: d.messageId },
      });
      const again = await f.admit();
      expect(again.body).toMatchObject({ taskId, messageId: d.messageId, attempt: 2 });
      expect(again.body.claimed.budgets[0].reservationId).not.toBe(reservationId);
      expect(await f.usage()).toEqual({ pool: 2, workLimit: 1, quota: 6, reserved: '500' });
    });

    it('nack without retry returns everything, voids the reservation, and the task is FAILED', async () => {
      const f = await fixture();
      const taskId = await f.submit(f.all({ pool: 2, quota: 3, budget: '500' }));
      const d = (await f.admit()).body;
      expect((await call(d.messageId, 'nack', { token: d.token, retry: false })).body).toEqual({ state: 'DEAD' });
      expect(await f.usage()).toEqual({ pool: 0, workLimit: 0, quota: 3, reserved: '0' });
      expect(await f.budget()).toMatchObject({ availableMinor: '10000', reservations: [] });
      expect(await task(taskId)).toMatchObject({ state: 'FAILED', failureReason: 'NACKED', attempts: 1 });
      expect((await f.admit()).statusCode).toBe(204);
    });

    it('lease expiry returns everything and voids the reservation; the token is LEASE_LOST; the task is PENDING and admitted again as attempt 2', async () => {
      const f = await fixture();
      const taskId = await f.submit(f.all({ pool: 2, quota: 3, budget: '500' }));
      const d = (await f.admit({ leaseSeconds: 5 })).body;
      expect(d.leaseExpiresAt).toBe(new Date(server.clock.now() + 5_000).toISOString());
      await advance(4_999);
      expect(await f.usage()).toEqual({ pool: 2, workLimit: 1, quota: 3, reserved: '500' });
      await advance(1); // past leaseExpiresAt; the operator's advance runs the lease sweep
      expect(await f.usage()).toEqual({ pool: 0, workLimit: 0, quota: 3, reserved: '0' });
      expectError(await call(d.messageId, 'complete', { token: d.token }), 409, 'LEASE_LOST');
      expect(await task(taskId)).toMatchObject({ state: 'PENDING', attempts: 1 });
      const events = await eventsOf((all) => all.some((e) => e.type === 'budget.voided' && e.data.messageId === d.messageId));
      expect(events.find((e) => e.type === 'budget.voided' && e.data.messageId === d.messageId).data).toMatchObject({ workKey: `delivery:${d.messageId}:1`, amountMinor: '500' });
      expect(events.find((e) => e.type === 'pool.units_released' && e.data.messageId === d.messageId).data).toMatchObject({ reason: 'LEASE_EXPIRED', units: 2, inUse: 0 });
      const again = await f.admit();
      expect(again.body).toMatchObject({ taskId, messageId: d.messageId, attempt: 2 });
      expect(await f.usage()).toEqual({ pool: 2, workLimit: 1, quota: 6, reserved: '500' });
    });

    it('cancel of a claimed task returns everything, voids the reservation and kills the token', async () => {
      const f = await fixture();
      const taskId = await f.submit(f.all({ pool: 2, quota: 3, budget: '500' }));
      const d = (await f.admit()).body;
      const cancelled = await server.api('POST', `/tasks/${taskId}/cancel`, { body: { reason: 'not needed' } });
      expect(cancelled.body).toEqual({ taskId, state: 'CANCELLED' });
      expect(await f.usage()).toEqual({ pool: 0, workLimit: 0, quota: 3, reserved: '0' });
      expect((await f.budget()).reservations).toEqual([]);
      expectError(await call(d.messageId, 'complete', { token: d.token }), 409, 'LEASE_LOST');
      expectError(await call(d.messageId, 'renew', { token: d.token }), 409, 'LEASE_LOST');
      expect((await f.admit()).statusCode).toBe(204);
    });

    it('a nack voids only the remainder of a reservation the worker partly settled; one settled in full is left alone', async () => {
      const f = await fixture();
      await f.submit(f.all({ pool: 1, quota: 1, budget: '500' }, ['budget']));
      await f.submit(f.all({ pool: 1, quota: 1, budget: '300' }, ['budget']));
      const first = (await f.admit()).body;
      const second = (await f.admit()).body;
      expect((await settle(f.budgetId, first.claimed.budgets[0].reservationId, '200')).statusCode).toBe(200);
      expect((await settle(f.budgetId, second.claimed.budgets[0].reservationId, '300')).body.reservation.state).toBe('SETTLED');
      expect((await call(first.messageId, 'nack', { token: first.token, retry: false })).body.state).toBe('DEAD');
      expect((await call(second.messageId, 'nack', { token: second.token, retry: false })).body.state).toBe('DEAD');
      expect(await f.budget()).toMatchObject({ reservedMinor: '0', settledMinor: '500', availableMinor: '9500', reservations: [] });
      const events = await eventsOf((all) => all.some((e) => e.type === 'budget.voided' && e.data.messageId === first.messageId));
      const voids = events.filter((e) => e.type === 'budget.voided' && (e.data.messageId === first.messageId || e.data.messageId === second.messageId));
      expect(voids.map((e) => e.data)).toEqual([expect.objectContaining({ messageId: first.messageId, amountMinor: '300', reservationState: 'VOIDED', workKey: `delivery:${first.messageId}:1` })]);
    });

    it('a delivery whose task expired while it was claimed is not admitted again after its lease runs out', async () => {
      const f = await fixture();
      const taskId = await f.submit({ ...f.all({ pool: 2, quota: 1, budget: '100' }, ['pool', 'budget']), deadline: new Date(server.clock.now() + 10_000).toISOString() });
      const d = (await f.admit({ leaseSeconds: 30 })).body;
      await advance(10_000); // the deadline sweep: EXPIRED while the delivery is claimed
      expect(await task(taskId)).toMatchObject({ state: 'EXPIRED', failureReason: 'DEADLINE_EXCEEDED' });
      await advance(20_000); // the lease runs out: what the claim held goes back
      expect(await f.usage()).toEqual({ pool: 0, workLimit: 0, quota: 0, reserved: '0' });
      // The task is terminal: its delivery must not be worked (nor hold resources) again.
      const again = await f.admit();
      expect(again.statusCode, JSON.stringify(again.body)).toBe(204);
      expect(await f.usage()).toEqual({ pool: 0, workLimit: 0, quota: 0, reserved: '0' });
      expect(await task(taskId)).toMatchObject({ state: 'EXPIRED', attempts: 1 });
      expect((await messages(f.box))[0]).toMatchObject({ id: d.messageId, state: 'CANCELLED', attempt: 1 });
    });

    it('renew extends the lease, and the claim keeps its pool units and slot', async () => {
      const f = await fixture();
      await f.submit(f.all({ pool: 2, quota: 3, budget: '500' }));
      const d = (await f.admit({ leaseSeconds: 5 })).body;
      await advance(4_000);
      const renewed = await call(d.messageId, 'renew', { token: d.token, leaseSeconds: 60 });
      expect(renewed.body).toEqual({ leaseExpiresAt: new Date(server.clock.now() + 60_000).toISOString() });
      await advance(10_000); // well past the first lease
      expect(await f.usage()).toEqual({ pool: 2, workLimit: 1, quota: 3, reserved: '500' });
      expect((await messages(f.box))[0]).toMatchObject({ state: 'CLAIMED', leaseExpiresAt: renewed.body.leaseExpiresAt });
      expect((await call(d.messageId, 'complete', { token: d.token })).statusCode).toBe(200);
      expect(await f.usage()).toEqual({ pool: 0, workLimit: 0, quota: 3, reserved: '500' });
    });

    it('quota units are spent (a nack gives none back); the 5th failed attempt makes the task FAILED', async () => {
      const f = await fixture({ unitsLimit: 10 });
      const taskId = await f.submit(f.all({ pool: 1, quota: 2, budget: '100' }));
      const messageIds = new Set<string>();
      for (let attempt = 1; attempt <= 5; attempt++) {
        const d = (await f.admit()).body;
        expect(d).toMatchObject({ taskId, attempt });
        messageIds.add(d.messageId);
        expect((await f.quota()).usedUnits).toBe(2 * attempt);
        const nacked = await call(d.messageId, 'nack', { token: d.token, retry: true });
        expect(nacked.body.state).toBe(attempt < 5 ? 'READY' : 'DEAD');
        expect((await f.quota()).usedUnits).toBe(2 * attempt);
      }
      expect(messageIds.size).toBe(1);
      expect(await task(taskId)).toMatchObject({ state: 'FAILED', failureReason: 'ATTEMPTS_EXHAUSTED', attempts: 5 });
      expect(await f.usage()).toEqual({ pool: 0, workLimit: 0, quota: 10, reserved: '0' });
      expect((await f.admit()).statusCode).toBe(204);
      const [messageId] = [...messageIds];
      const events = await eventsOf((all) => all.filter((e) => e.type === 'budget.voided' && e.data.messageId === messageId).length >= 5);
      expect(events.filter((e) => e.type === 'budget.voided' && e.data.messageId === messageId).map((e) => e.data.workKey)).toEqual(
        [1, 2, 3, 4, 5].map((n) => `delivery:${messageId}:${n}`),
      );
    });
  });

  describe('idempotency', () => {
    it('a replay with the same Idempotency-Key returns the same delivery without claiming again', async () => {
      const f = await fixture();
      const taskId = await f.submit(f.all({ pool: 1, quota: 3, budget: '500' }));
      await f.submit(f.all({ pool: 1, quota: 3, budget: '500' }));
      const key = idem();
      const first = await f.admit({}, { idem: key });
      expect(first.statusCode).toBe(200);
      expect(first.body.taskId).toBe(taskId);
      const usage = await f.usage();
      const replay = await f.admit({}, { idem: key });
      expect(replay.statusCode).toBe(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body).toEqual(first.body);
      expect(await f.usage()).toEqual(usage);
      expect((await messages(f.box)).map((m: { state: string }) => m.state)).toEqual(['CLAIMED', 'READY']);
      // The replayed token is the live one.
      expect((await call(first.body.messageId, 'complete', { token: replay.body.token })).statusCode).toBe(200);
      // The same key with another body is refused.
      expectError(await f.admit({ holder: 'someone-else' }, { idem: key }), 422, 'IDEMPOTENCY_KEY_REUSED');
    });

    it('an empty admit (204) stores nothing: the same key admits once work exists', async () => {
      const f = await fixture();
      const key = idem();
      const empty = await f.admit({}, { idem: key });
      expect(empty.statusCode).toBe(204);
      expect(empty.headers['idempotent-replayed']).toBeUndefined();
      const taskId = await f.submit();
      const got = await f.admit({}, { idem: key });
      expect(got.statusCode).toBe(200);
      expect(got.body.taskId).toBe(taskId);
      expect(got.headers['idempotent-replayed']).toBeUndefined();
      const replay = await f.admit({}, { idem: key });
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body.token).toBe(got.body.token);
    });
  });

  describe('long poll', () => {
    it('wakes on a submit', async () => {
      const f = await fixture();
      const poll = f.admit({ waitMs: 20_000 });
      await parked();
      const taskId = await f.submit();
      const res = await poll;
      expect(res.statusCode).toBe(200);
      expect(res.body.taskId).toBe(taskId);
    });

    it.each<Exclude<Kind, 'quota'>>(['pool', 'workLimit', 'budget'])('wakes when the %s found short is given back', async (short) => {
      const f = await fixture({ capacity: 1, maxConcurrent: 1, limitMinor: '500' });
      const units = { pool: 1, quota: 1, budget: '500' };
      await f.submit(f.all(units, [short]));
      const holder = (await f.admit()).body;
      const waiting = await f.submit(f.all(units, [short]));
      const poll = f.admit({ waitMs: 20_000, holderSession: 'session-2' });
      await parked(2); // the mailbox and the short resource
      if (short === 'budget') {
        // The reservation rides on the delivery: voiding it is what gives the funds back.
        const voided = await server.api('POST', `/budgets/${f.budgetId}/void`, { body: { reservationId: holder.claimed.budgets[0].reservationId, workKey: `void-${f.tag}` } });
        expect(voided.statusCode).toBe(200);
      } else {
        expect((await call(holder.messageId, 'complete', { token: holder.token })).statusCode).toBe(200);
      }
      const res = await poll;
      expect(res.statusCode).toBe(200);
      expect(res.body.taskId).toBe(waiting);
    });

    it('answers 204 when the wait ends; waits longer than 30 s are shortened', async () => {
      const f = await fixture();
      const poll = f.admit({ waitMs: 5_000 });
      await parked();
      server.clock.advance(5_000);
      expect((await poll).statusCode).toBe(204);

      const capped = f.admit({ waitMs: 120_000 });
      let answered = false;
      void capped.then(() => (answered = true));
      await parked();
      server.clock.advance(29_999);
      await new Promise((r) => setTimeout(r, 50));
      expect(answered).toBe(false);
      server.clock.advance(1);
      expect((await capped).statusCode).toBe(204);
    });

    it('an admit only a quota window roll can satisfy wakes when the clock passes the window end', async () => {
      const f = await fixture({ unitsLimit: 4, windowSeconds: 60 });
      const windowEnd = server.clock.now() + 60_000;
      const first = await f.submit(f.all({ pool: 1, quota: 4, budget: '1' }, ['quota']));
      const d = (await f.admit()).body;
      expect(d.taskId).toBe(first);
      expect((await call(d.messageId, 'complete', { token: d.token })).statusCode).toBe(200);
      const second = await f.submit(f.all({ pool: 1, quota: 4, budget: '1' }, ['quota']));
      server.clock.advance(40_000); // the window ends 20 s from now, within the wait
      const poll = f.admit({ waitMs: 30_000 });
      let answered = false;
      void poll.then(() => (answered = true));
      await timeWakeAt(windowEnd);
      server.clock.advance(windowEnd - server.clock.now() - 1);
      await new Promise((r) => setTimeout(r, 50));
      expect(answered).toBe(false);
      server.clock.advance(1); // no commit: only the clock passing the window end wakes it
      const res = await poll;
      expect(res.statusCode).toBe(200);
      expect(res.body.taskId).toBe(second);
      expect(server.clock.now()).toBe(windowEnd);
    });

    it('an admit blocked by a quota cooldown wakes when the cooldown ends', async () => {
      const f = await fixture();
      const cooldown = await server.api('POST', `/allowances/${f.quotaId}/cooldown`, { body: { seconds: 10, reason: 'provider 429' } });
      expect(cooldown.statusCode).toBe(200);
      const cooldownEnd = server.clock.now() + 10_000;
      expect(cooldown.body.cooldownUntil).toBe(new Date(cooldownEnd).toISOString());
      const taskId = await f.submit(f.all({ pool: 1, quota: 1, budget: '1' }, ['quota']));
      expect((await f.admit()).statusCode).toBe(204);
      const poll = f.admit({ waitMs: 30_000 });
      await timeWakeAt(cooldownEnd);
      server.clock.advance(10_000);
      const res = await poll;
      expect(res.statusCode).toBe(200);
      expect(res.body.taskId).toBe(taskId);
    });

    it('a cooldown that ends while the admit is reading still wakes it: no lost clock wake-up', async () => {
      // The clock passes the cooldown's end after the admit's read found the quota short and
      // before the long poll arms its clock wake-up: the wake-up is then already due.
      let afterTransaction: (() => void) | undefined;
      const hooked: Store = {
        kind: store.kind,
        transaction: async (work) => {
          const result = await store.transaction(work);
          afterTransaction?.();
          return result;
        },
        read: (work) => store.read(work),
        maintain: () => store.maintain(),
        close: () => store.close(),
      };
      const other = await startTestServer(hooked, { seed: 12 });
      try {
        const box = await created('/mailboxes', { name: 'race-box' }, other);
        const quotaId = await created('/allowances', { name: 'race-q', unitsLimit: 10, windowSeconds: 3600 }, other);
        expect((await other.api('POST', `/allowances/${quotaId}/cooldown`, { body: { seconds: 10 } })).statusCode).toBe(200);
        const cooldownEnd = other.clock.now() + 10_000;
        const submitted = await other.api('POST', '/tasks', { body: { scopeId, mailboxId: box, taskKey: 'race', requirements: { quotas: [{ name: 'race-q', units: 1 }] } }, idem: idem() });
        expect(submitted.statusCode).toBe(201);
        const notifier = other.baton.deps.notifier as LocalNotifier;
        // Both topics (the mailbox, the allowance) are armed only around the poll's second read.
        afterTransaction = () => {
          if (notifier.parked < 2) return;
          afterTransaction = undefined;
          other.clock.advance(cooldownEnd - other.clock.now());
        };
        const poll = other.api('POST', '/tasks/admit', { body: { scopeId, mailboxId: box, holder: 'w', holderSession: 's', waitMs: 30_000 }, idem: idem() });
        const first = await Promise.race([poll, new Promise<'still waiting'>((r) => setTimeout(() => r('still waiting'), 1_000))]);
        if (first === 'still waiting') other.clock.advance(30_000); // end the stuck poll so the server can close
        const res = await poll;
        expect(first, 'the admit was still waiting 1 s after the cooldown had ended').not.toBe('still waiting');
        expect(res.statusCode).toBe(200);
        expect(res.body.taskId).toBe(submitted.body.taskId);
      } finally {
        await other.close();
      }
    });

    it('answers 204 at once when the server starts draining', async () => {
      const draining = await startTestServer(store, { seed: 11 });
      const box = await created('/mailboxes', { name: 'drain-box' }, draining);
      const poll = draining.api('POST', '/tasks/admit', { body: { scopeId, mailboxId: box, holder: 'w', holderSession: 's', waitMs: 30_000 }, idem: idem() });
      await parked(1, draining);
      const closed = draining.close();
      expect((await poll).statusCode).toBe(204);
      await closed;
      expect((draining.baton.deps.notifier as LocalNotifier).parked).toBe(0);
    });
  });

  describe('errors and bypass', () => {
    it('needs an Idempotency-Key, a known mailbox and coordination_write', async () => {
      const f = await fixture();
      expectError(await f.admit({}, { idem: null }), 400, 'IDEMPOTENCY_KEY_REQUIRED');
      const unknown = await server.api('POST', '/tasks/admit', { body: { scopeId, mailboxId: unknownId, holder: 'w', holderSession: 's' }, idem: idem() });
      expectError(unknown, 404, 'NOT_FOUND');
      const reader = await server.newKey({ permissions: ['coordination_read', 'resource_config', 'usage_read'] });
      const denied = await f.admit({}, { key: reader });
      expectError(denied, 403, 'FORBIDDEN');
      expect(denied.body.error.message).toBe('credential lacks coordination_write');
      expectError(await f.admit({}, { key: 'bk_not-a-key' }), 401, 'UNAUTHENTICATED');
    });

    it.each([
      ['a missing holder', { holder: undefined }, 'body.holder'],
      ['a missing holderSession', { holderSession: undefined }, 'body.holderSession'],
      ['a scopeId that is not a uuid', { scopeId: 'not-a-uuid' }, 'body.scopeId'],
      ['a mailboxId that is not a uuid', { mailboxId: 'not-a-uuid' }, 'body.mailboxId'],
      ['waitMs above 120000', { waitMs: 120_001 }, 'body.waitMs'],
      ['leaseSeconds below 5', { leaseSeconds: 4 }, 'body.leaseSeconds'],
      ['leaseSeconds above 600', { leaseSeconds: 601 }, 'body.leaseSeconds'],
    ])('refuses %s: 400 VALIDATION_FAILED', async (_what, extra, path) => {
      const f = await fixture();
      await f.submit();
      const res = await f.admit(extra);
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details).toContainEqual(expect.objectContaining({ path }));
      expect((await messages(f.box))[0].state).toBe('READY');
    });

    it.each([
      ['a pool named twice', (n: Record<string, string>) => ({ requirements: { pools: [{ name: n.pool, units: 1 }, { name: n.pool, units: 1 }] } })],
      ['a quota named twice', (n: Record<string, string>) => ({ requirements: { quotas: [{ name: n.quota, units: 1 }, { name: n.quota, units: 2 }] } })],
      ['a budget named twice', (n: Record<string, string>) => ({ requirements: { budgets: [{ name: n.budget, reserveMinor: '1' }, { name: n.budget, reserveMinor: '2' }] } })],
      ['reserveMinor "0"', (n: Record<string, string>) => ({ requirements: { budgets: [{ name: n.budget, reserveMinor: '0' }] } })],
      ['reserveMinor "000"', (n: Record<string, string>) => ({ requirements: { budgets: [{ name: n.budget, reserveMinor: '000' }] } })],
    ])('submit refuses requirements with %s: 400 VALIDATION_FAILED', async (_what, requirements) => {
      const f = await fixture();
      const res = await server.api('POST', '/tasks', { body: { scopeId, mailboxId: f.box, taskKey: 'bad', ...requirements(f.names) }, idem: idem() });
      expectError(res, 400, 'VALIDATION_FAILED');
    });

    it('a raw recv of a task delivery is a bypass: it claims no resources', async () => {
      const f = await fixture();
      const taskId = await f.submit(f.all({ pool: 2, quota: 3, budget: '500' }));
      const recv = await server.api('POST', `/mailboxes/${f.box}/recv`, { body: { scopeId, holder: 'raw', holderSession: 'raw-1' } });
      expect(recv.statusCode).toBe(200);
      expect(recv.body.payload.taskId).toBe(taskId);
      expect(recv.body.claimed).toEqual({ pools: [], quotas: [], budgets: [], workLimit: null });
      expect(await f.usage()).toEqual({ pool: 0, workLimit: 0, quota: 0, reserved: '0' });
      expect(await task(taskId)).toMatchObject({ state: 'RUNNING', attempts: 1 });
      const debug = (await server.api('GET', `/ops/tasks/${taskId}`)).body;
      expect(debug.events.find((e: { type: string }) => e.type === 'task.running').data.claimed).toBeNull();
      expect(debug.attempts[0].claimed).toBeNull();
      // Its end gives nothing back either: nothing goes below zero.
      expect((await call(recv.body.messageId, 'complete', { token: recv.body.token })).statusCode).toBe(200);
      expect(await f.usage()).toEqual({ pool: 0, workLimit: 0, quota: 0, reserved: '0' });
    });
  });

  describe('observing', () => {
    it('the debugger view lists each attempt with holder and session; task.running and message.claimed carry what was claimed', async () => {
      const f = await fixture();
      const taskId = await f.submit(f.all({ pool: 1, quota: 2, budget: '300' }));
      const first = (await f.admit({ holder: 'worker-a', holderSession: 'sess-a' })).body;
      await call(first.messageId, 'nack', { token: first.token, retry: true });
      const second = (await f.admit({ holder: 'worker-b', holderSession: 'sess-b' })).body;
      const debug = await server.api('GET', `/ops/tasks/${taskId}`);
      expect(debug.statusCode).toBe(200);
      expect(debug.body.task).toMatchObject({ state: 'RUNNING', attempts: 2 });
      expect(debug.body.attempts).toEqual([
        { messageId: first.messageId, attempt: 1, holder: 'worker-a', holderSession: 'sess-a', leaseExpiresAt: first.leaseExpiresAt, claimedAt: expect.any(String), claimed: first.claimed },
        { messageId: second.messageId, attempt: 2, holder: 'worker-b', holderSession: 'sess-b', leaseExpiresAt: second.leaseExpiresAt, claimedAt: expect.any(String), claimed: second.claimed },
      ]);
      expect(debug.body.messages[0]).toMatchObject({ id: second.messageId, state: 'CLAIMED', holder: 'worker-b', holderSession: 'sess-b', attempt: 2 });
      const running = debug.body.events.filter((e: { type: string }) => e.type === 'task.running');
      expect(running.map((e: { data: unknown }) => e.data)).toEqual([
        expect.objectContaining({ taskId, attempt: 1, holder: 'worker-a', holderSession: 'sess-a', claimed: first.claimed }),
        expect.objectContaining({ taskId, attempt: 2, holder: 'worker-b', holderSession: 'sess-b', claimed: second.claimed }),
      ]);
      expect(debug.body.events.map((e: { type: string }) => e.type)).toEqual(['task.submitted', 'task.running', 'task.requeued', 'task.running']);
      const events = await eventsOf((all) => all.some((e) => e.type === 'message.claimed' && e.data.messageId === second.messageId && e.data.attempt === 2));
      const claimedEvent = events.find((e) => e.type === 'message.claimed' && e.data.messageId === second.messageId && e.data.attempt === 2);
      expect(claimedEvent).toMatchObject({ aggregate: { type: 'mailbox', id: f.box }, data: { admitted: true, claimed: second.claimed, holder: 'worker-b' } });
      // Both attempts claimed under the same messageId: the second claim's events are the last ones.
      expect(events.findLast((e) => e.type === 'pool.units_claimed' && e.data.messageId === second.messageId)).toMatchObject({
        aggregate: { type: 'pool', id: f.poolId },
        data: { taskId, holder: 'worker-b', holderSession: 'sess-b', units: 1, inUse: 1 },
      });
      expect(events.findLast((e) => e.type === 'work_limit.slot_claimed' && e.data.messageId === second.messageId)).toMatchObject({ aggregate: { type: 'work_limit', id: f.workLimitId } });
      expect(events.findLast((e) => e.type === 'allowance.consumed' && e.data.messageId === second.messageId)).toMatchObject({ data: { taskId, units: 2 } });
      expect(events.findLast((e) => e.type === 'budget.reserved' && e.data.messageId === second.messageId)).toMatchObject({ data: { taskId, amountMinor: '300', holder: 'worker-b', reservationId: second.claimed.budgets[0].reservationId } });
    });
  });
});
