import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { idem, openTestServer, type Reply, type TestServer } from '../support/server';

/**
 * Diagnostics (docs/design/0018-diagnostics.md; docs/api.md, "Diagnostics"): census, backlog, waits and the run
 * view, after real operations. Every test works in a space of its own, so its counts are
 * exact; ages are measured on the server's manual clock.
 */

const scopeId = '11111111-1111-4111-8111-111111111111';
const otherScope = '44444444-4444-4444-8444-444444444444';

describe.each(storeTargets())('diagnostics over HTTP on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ server, close } = await openTestServer(target));
  });
  afterAll(async () => close());

  let spaces = 0;
  /** A new space of the test organization and a key with every permission there. */
  const freshSpace = async () => {
    const space = await server.admin('POST', `/orgs/${server.orgId}/spaces`, { name: `diag-${++spaces}` });
    expect(space.statusCode).toBe(201);
    const key = await server.newKey({ spaceIds: [space.body.id] });
    const call = (method: 'GET' | 'POST', path: string, body?: unknown, as: string = key): Promise<Reply> =>
      server.inject(method, `/v1/spaces/${space.body.id}${path}`, { authorization: `Bearer ${as}`, ...(method === 'POST' ? { 'idempotency-key': idem() } : {}) }, body);
    const ok = async (method: 'GET' | 'POST', path: string, body?: unknown): Promise<any> => {
      const res = await call(method, path, body);
      expect(res.statusCode, `${method} ${path}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
      return res.body;
    };
    return { spaceId: space.body.id as string, call, ok };
  };
  const advance = async (ms: number) => expect((await server.admin('POST', '/clock/advance', { ms })).statusCode).toBe(200);
  const zeros = (states: string[]) => Object.fromEntries(states.map((s) => [s, 0]));

  it('census: every resource of the space by type and state, after real operations', async () => {
    const s = await freshSpace();
    const budget = await s.ok('POST', '/budgets', { name: 'spend', currency: 'USD', scale: 2, limitMinor: '1000' });
    await s.ok('POST', `/budgets/${budget.id}/reserve`, { scopeId, holder: 'w', amountMinor: '100' });
    await s.ok('POST', '/pools', { name: 'gpu', capacity: 2 });
    await s.ok('POST', '/work-limits', { name: 'wl', maxConcurrent: 2 });
    const quota = await s.ok('POST', '/allowances', { name: 'q', unitsLimit: 1, windowSeconds: 3600 });
    await s.ok('POST', `/allowances/${quota.id}/consume`, { scopeId, units: 1, holder: 'w' });
    await s.ok('POST', `/allowances/${quota.id}/wait`, { scopeId, units: 1, holder: 'w2' });
    const barrier = await s.ok('POST', '/barriers', { scopeId, target: 2 });
    await s.ok('POST', `/barriers/${barrier.id}/arrive`, { arrivalKey: 'a' });
    const plain = await s.ok('POST', '/mailboxes', { name: 'plain' });
    const work = await s.ok('POST', '/mailboxes', { name: 'work' });
    for (let i = 0; i < 3; i++) await s.ok('POST', `/mailboxes/${plain.id}/messages`, { scopeId, payload: { i } });
    const first = await s.ok('POST', `/mailboxes/${plain.id}/recv`, { scopeId, holder: 'w', holderSession: 's' });
    const second = await s.ok('POST', `/mailboxes/${plain.id}/recv`, { scopeId, holder: 'w', holderSession: 's' });
    await s.ok('POST', `/messages/${first.messageId}/complete`, { token: first.token });
    await s.ok('POST', `/messages/${second.messageId}/nack`, { token: second.token, retry: false });
    const kept = await s.ok('POST', '/tasks', { scopeId, mailboxId: work.id, taskKey: 'kept' });
    const dropped = await s.ok('POST', '/tasks', { scopeId, mailboxId: work.id, taskKey: 'dropped' });
    await s.ok('POST', `/tasks/${dropped.taskId}/cancel`, {});
    await s.ok('POST', '/task-groups', { mailboxId: work.id, condition: 'ALL_TERMINAL', parentScopeId: scopeId });
    expect(kept.state).toBe('PENDING');

    const res = await s.call('GET', '/diagnostics/census');
    expect(res.statusCode, JSON.stringify(res.body)).toBe(200);
    const n = (total: number, byState: Record<string, number> = {}) => ({ total, capped: false, byState });
    expect(res.body).toEqual({
      countCap: 100_000,
      resources: {
        budgets: n(1),
        reservations: n(1, { ...zeros(['ACTIVE', 'SETTLED', 'VOIDED']), ACTIVE: 1 }),
        barriers: n(1, { ...zeros(['WAITING', 'RELEASED', 'CANCELLED']), WAITING: 1 }),
        pools: n(1),
        workLimits: n(1),
        allowances: n(1),
        allowanceWaiters: n(1, { ...zeros(['WAITING', 'GRANTED', 'CANCELLED', 'EXPIRED']), WAITING: 1 }),
        mailboxes: n(2),
        // plain: one READY, one ACKED, one DEAD; work: the kept task's READY delivery and the dropped one's CANCELLED.
        messages: n(5, { READY: 2, CLAIMED: 0, ACKED: 1, DEAD: 1, CANCELLED: 1 }),
        tasks: n(2, { ...zeros(['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'EXPIRED']), PENDING: 1, CANCELLED: 1 }),
        taskGroups: n(1, { OPEN: 1, SEALED: 0, DECIDED: 0 }),
        destinations: n(0, { ACTIVE: 0, PAUSED: 0 }),
      },
    });
  });

  it('backlog: READY, CLAIMED and DEAD per mailbox with the oldest READY age on the manual clock, paged by name', async () => {
    const s = await freshSpace();
    const box = await s.ok('POST', '/mailboxes', { name: 'a-box' });
    await s.ok('POST', '/mailboxes', { name: 'b-empty' });
    const sentAt = server.clock.now();
    for (let i = 0; i < 3; i++) await s.ok('POST', `/mailboxes/${box.id}/messages`, { scopeId, payload: { i } });
    await advance(30_000);
    await s.ok('POST', `/mailboxes/${box.id}/messages`, { scopeId, payload: { i: 3 } });
    const claimed = await s.ok('POST', `/mailboxes/${box.id}/recv`, { scopeId, holder: 'w', holderSession: 's' });
    const dead = await s.ok('POST', `/mailboxes/${box.id}/recv`, { scopeId, holder: 'w', holderSession: 's' });
    await s.ok('POST', `/messages/${dead.messageId}/nack`, { token: dead.token, retry: false });
    expect(claimed.messageId).not.toBe(dead.messageId);
    await advance(15_000);

    const page = await s.call('GET', '/diagnostics/backlog?limit=1');
    expect(page.statusCode, JSON.stringify(page.body)).toBe(200);
    // Two of the first three were taken (oldest first): the third, sent at sentAt, is the oldest READY.
    expect(page.body.items).toEqual([
      { mailboxId: box.id, name: 'a-box', ready: 2, claimed: 1, dead: 1, capped: false, oldestReadyAt: new Date(sentAt).toISOString(), oldestReadyAgeSeconds: (server.clock.now() - sentAt) / 1000 },
    ]);
    expect(page.body.items[0].oldestReadyAgeSeconds).toBeGreaterThanOrEqual(45);
    expect(page.body.nextCursor).toEqual(expect.any(String));
    const next = await s.call('GET', `/diagnostics/backlog?limit=1&cursor=${page.body.nextCursor}`);
    expect(next.body).toEqual({
      items: [{ mailboxId: expect.any(String), name: 'b-empty', ready: 0, claimed: 0, dead: 0, capped: false, oldestReadyAt: null, oldestReadyAgeSeconds: null }],
      nextCursor: null,
    });
    expect((await s.call('GET', '/diagnostics/backlog?cursor=not-a-cursor')).statusCode).toBe(400);
  });

  it('waits: wait lines with the oldest waiter age, barriers with who arrived, tasks blocked at admission and why', async () => {
    const s = await freshSpace();
    const quota = await s.ok('POST', '/allowances', { name: 'q', unitsLimit: 1, windowSeconds: 3600 });
    await s.ok('POST', `/allowances/${quota.id}/consume`, { scopeId, units: 1, holder: 'w' });
    const firstWaitAt = server.clock.now();
    await s.ok('POST', `/allowances/${quota.id}/wait`, { scopeId, units: 1, holder: 'w1', ttlSeconds: 3600 });
    await advance(10_000);
    await s.ok('POST', `/allowances/${quota.id}/wait`, { scopeId, units: 1, holder: 'w2', ttlSeconds: 3600 });
    const barrier = await s.ok('POST', '/barriers', { scopeId, target: 3 });
    await s.ok('POST', `/barriers/${barrier.id}/arrive`, { arrivalKey: 'west' });
    await s.ok('POST', `/barriers/${barrier.id}/arrive`, { arrivalKey: 'east' });
    const released = await s.ok('POST', '/barriers', { scopeId, target: 1 });
    await s.ok('POST', `/barriers/${released.id}/arrive`, { arrivalKey: 'only' });

    const pool = await s.ok('POST', '/pools', { name: 'gpu', capacity: 1 });
    const budget = await s.ok('POST', '/budgets', { name: 'spend', currency: 'USD', scale: 2, limitMinor: '500' });
    const box = await s.ok('POST', '/mailboxes', { name: 'work' });
    const submit = (taskKey: string, requirements?: unknown) => s.ok('POST', '/tasks', { scopeId, mailboxId: box.id, taskKey, ...(requirements ? { requirements } : {}) });
    const holder = await submit('holds-gpu', { pools: [{ name: 'gpu', units: 1 }] });
    const admitted = await s.ok('POST', '/tasks/admit', { scopeId, mailboxId: box.id, holder: 'w', holderSession: 's' });
    expect(admitted.taskId).toBe(holder.taskId);
    const needsGpu = await submit('needs-gpu', { pools: [{ name: 'gpu', units: 1 }] });
    const needsQuota = await submit('needs-quota', { quotas: [{ name: 'q', units: 1 }] });
    const needsFunds = await submit('needs-funds', { budgets: [{ name: 'spend', reserveMinor: '900' }] });
    await submit('needs-nothing');
    const fits = await submit('fits', { budgets: [{ name: 'spend', reserveMinor: '100' }] });
    await advance(5_000);

    const res = await s.call('GET', '/diagnostics/waits');
    expect(res.statusCode, JSON.stringify(res.body)).toBe(200);
    expect(res.body.waitLines).toEqual({
      items: [{ allowanceId: quota.id, name: 'q', waiting: 2, oldestWaiterAt: new Date(firstWaitAt).toISOString(), oldestWaiterAgeSeconds: 15 }],
      truncated: false,
    });
    expect(res.body.barriers).toEqual({
      items: [{ barrierId: barrier.id, scopeId, epoch: 1, target: 3, arrivals: 2, missing: 1, arrivalKeys: ['east', 'west'], arrivalKeysTruncated: false, createdAt: expect.any(String) }],
      truncated: false,
    });
    const wait = (taskId: string, taskKey: string, blockedBy: unknown[]) => ({
      taskId,
      taskKey,
      state: 'PENDING',
      mailboxId: box.id,
      scopeId,
      waitingOn: 'RESOURCES',
      delivery: { messageId: expect.any(String), state: 'READY', attempt: 0, holder: null, holderSession: null, leaseExpiresAt: null },
      blockedBy,
    });
    // Oldest first; the task without requirements and the one whose budget fits are not blocked.
    expect(res.body.blockedTasks).toEqual({
      items: [
        wait(needsGpu.taskId, 'needs-gpu', [{ resource: 'pool', id: pool.id, name: 'gpu', reason: 'UNITS_IN_USE', needed: '1', available: '0', retryAt: null }]),
        wait(needsQuota.taskId, 'needs-quota', [{ resource: 'allowance', id: quota.id, name: 'q', reason: 'WAIT_LINE', needed: '1', available: '0', retryAt: null }]),
        wait(needsFunds.taskId, 'needs-funds', [{ resource: 'budget', id: budget.id, name: 'spend', reason: 'FUNDS_SHORT', needed: '900', available: '500', retryAt: null }]),
      ],
      examined: 4,
      truncated: false,
    });
    expect(res.body.blockedTasks.items.map((t: { taskId: string }) => t.taskId)).not.toContain(fits.taskId);
  });

  it('ops/runs/{scopeId}: counts under the scope and each live task with what it waits for, paged; 404 for an empty scope', async () => {
    const s = await freshSpace();
    await s.ok('POST', '/pools', { name: 'gpu', capacity: 1 });
    const budget = await s.ok('POST', '/budgets', { name: 'spend', currency: 'USD', scale: 2, limitMinor: '1000' });
    const box = await s.ok('POST', '/mailboxes', { name: 'work' });
    // Submit order is (createdAt, id): the clock moves between submits, so it is this order.
    const submit = async (taskKey: string, extra: Record<string, unknown> = {}, scope = scopeId) => {
      await advance(1_000);
      return s.ok('POST', '/tasks', { scopeId: scope, mailboxId: box.id, taskKey, ...extra });
    };
    const running = await submit('running', { requirements: { pools: [{ name: 'gpu', units: 1 }] } });
    const admitted = await s.ok('POST', '/tasks/admit', { scopeId, mailboxId: box.id, holder: 'w', holderSession: 's', leaseSeconds: 60 });
    const blocked = await submit('blocked', { requirements: { pools: [{ name: 'gpu', units: 1 }] } });
    const ready = await submit('ready');
    const cancelled = await submit('cancelled');
    await s.ok('POST', `/tasks/${cancelled.taskId}/cancel`, {});
    await submit('elsewhere', {}, otherScope);
    await s.ok('POST', `/budgets/${budget.id}/reserve`, { scopeId, holder: 'w', amountMinor: '100' });
    await s.ok('POST', '/task-groups', { mailboxId: box.id, condition: 'ALL_TERMINAL', parentScopeId: scopeId });

    const res = await s.call('GET', `/ops/runs/${scopeId}?limit=2`);
    expect(res.statusCode, JSON.stringify(res.body)).toBe(200);
    expect(res.body.scopeId).toBe(scopeId);
    expect(res.body.counts).toEqual({
      tasks: { total: 4, capped: false, byState: { PENDING: 2, RUNNING: 1, SUCCEEDED: 0, FAILED: 0, CANCELLED: 1, EXPIRED: 0 } },
      taskGroups: { total: 1, capped: false, byState: { OPEN: 1, SEALED: 0, DECIDED: 0 } },
      reservations: { total: 1, capped: false, byState: { ACTIVE: 1, SETTLED: 0, VOIDED: 0 } },
      timers: { total: 0, capped: false, byState: { ARMED: 0, FIRED: 0, CANCELLED: 0 } },
      claims: { total: 0, capped: false, byState: { HELD: 0, RELEASED: 0, EXPIRED: 0 } },
    });
    const base = { mailboxId: box.id, scopeId };
    expect(res.body.liveTasks.items).toEqual([
      {
        ...base, taskId: running.taskId, taskKey: 'running', state: 'RUNNING', waitingOn: 'WORKER', blockedBy: [],
        delivery: { messageId: admitted.messageId, state: 'CLAIMED', attempt: 1, holder: 'w', holderSession: 's', leaseExpiresAt: admitted.leaseExpiresAt },
      },
      {
        ...base, taskId: blocked.taskId, taskKey: 'blocked', state: 'PENDING', waitingOn: 'RESOURCES',
        delivery: expect.objectContaining({ state: 'READY', attempt: 0 }),
        blockedBy: [expect.objectContaining({ resource: 'pool', name: 'gpu', reason: 'UNITS_IN_USE', needed: '1', available: '0' })],
      },
    ]);
    expect(res.body.liveTasks.nextCursor).toEqual(expect.any(String));
    const next = await s.call('GET', `/ops/runs/${scopeId}?limit=2&cursor=${res.body.liveTasks.nextCursor}`);
    expect(next.body.liveTasks).toEqual({
      items: [{ ...base, taskId: ready.taskId, taskKey: 'ready', state: 'PENDING', waitingOn: 'ADMISSION', delivery: expect.objectContaining({ state: 'READY' }), blockedBy: [] }],
      nextCursor: null,
    });

    const unknown = await s.call('GET', '/ops/runs/55555555-5555-4555-8555-555555555555');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body.error.code).toBe('NOT_FOUND');
  });

  it('every route needs usage_read (403 without it), and another organization\'s space is 404', async () => {
    const s = await freshSpace();
    const box = await s.ok('POST', '/mailboxes', { name: 'work' });
    await s.ok('POST', '/tasks', { scopeId, mailboxId: box.id, taskKey: 't' });
    const noUsage = await server.newKey({ permissions: ['coordination_read', 'coordination_write', 'resource_config'], spaceIds: [s.spaceId] });
    const routes = ['/diagnostics/census', '/diagnostics/backlog', '/diagnostics/waits', `/ops/runs/${scopeId}`];
    for (const path of routes) {
      const res = await s.call('GET', path, undefined, noUsage);
      expect(res.statusCode, path).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
      expect((await s.call('GET', path)).statusCode, path).toBe(200);
    }
    const usageOnly = await server.newKey({ permissions: ['usage_read'], spaceIds: [s.spaceId] });
    expect((await s.call('GET', '/diagnostics/census', undefined, usageOnly)).statusCode).toBe(200);

    const org = await server.admin('POST', '/orgs', { name: 'other', plan: 'TEAM' });
    const theirs = await server.admin('POST', `/orgs/${org.body.id}/spaces`, { name: 'theirs' });
    for (const path of routes) {
      const res = await server.inject('GET', `/v1/spaces/${theirs.body.id}${path}`, { authorization: `Bearer ${server.key}` });
      expect(res.statusCode, path).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
  });
});
