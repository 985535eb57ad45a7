import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { idem, startTestServer, type TestServer } from '../support/server';

const scopeId = '11111111-1111-4111-8111-111111111111';
const unknownId = '22222222-2222-4222-8222-222222222222';

describe.each(storeTargets())('tasks over HTTP on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;
  let box: string;

  beforeAll(async () => {
    const opened = await target.open();
    server = await startTestServer(opened.store);
    close = async () => {
      await server.close();
      await opened.close();
    };
    box = (await server.api('POST', '/mailboxes', { body: { name: 'task-box' }, idem: idem() })).body.id;
    expect((await server.api('POST', '/pools', { body: { name: 'gpu', capacity: 2 }, idem: idem() })).statusCode).toBe(201);
    expect((await server.api('POST', '/work-limits', { body: { name: 'wl', maxConcurrent: 3 }, idem: idem() })).statusCode).toBe(201);
    expect((await server.api('POST', '/allowances', { body: { name: 'q', unitsLimit: 10, windowSeconds: 60 }, idem: idem() })).statusCode).toBe(201);
    expect((await server.api('POST', '/budgets', { body: { name: 'spend', currency: 'USD', scale: 2, limitMinor: '10000' }, idem: idem() })).statusCode).toBe(201);
  });
  afterAll(async () => close());

  let counter = 0;
  const key = () => `task-${++counter}`;
  const submit = (extra: Record<string, unknown> = {}, opts: { key?: string } = {}) =>
    server.api('POST', '/tasks', { body: { scopeId, mailboxId: box, taskKey: key(), input: { n: counter }, ...extra }, idem: idem(), ...opts });
  const get = async (id: string) => (await server.api('GET', `/tasks/${id}`)).body;
  const recv = () => server.api('POST', `/mailboxes/${box}/recv`, { body: { scopeId, holder: 'worker', holderSession: 's1' } });
  const drain = async () => {
    // Leave no READY delivery behind for the next test's recv.
    const ready = (await server.api('GET', `/mailboxes/${box}/messages?state=READY&limit=200`)).body.items as { payload: { taskId: string } }[];
    for (const m of ready) await server.api('POST', `/tasks/${m.payload.taskId}/cancel`, { body: {} });
  };

  it('submits (201), joins with the same fingerprint (200), refuses another fingerprint (409 TASK_KEY_CONFLICT)', async () => {
    const taskKey = key();
    const body = { scopeId, mailboxId: box, taskKey, input: { a: 1, b: [1, 2] }, requirements: { pools: [{ name: 'gpu', units: 1 }] }, workLimit: 'wl' };
    const first = await server.api('POST', '/tasks', { body, idem: idem() });
    expect(first.statusCode).toBe(201);
    expect(first.body).toMatchObject({ state: 'PENDING', created: true });
    const again = await server.api('POST', '/tasks', { body: { ...body, input: { b: [1, 2], a: 1 }, subscriberId: 'sub-1' }, idem: idem() });
    expect(again.statusCode).toBe(200);
    expect(again.body).toEqual({ taskId: first.body.taskId, state: 'PENDING', created: false });
    const view = await get(first.body.taskId);
    expect(view).toMatchObject({ taskKey, mailboxId: box, scopeId, state: 'PENDING', input: { a: 1, b: [1, 2] }, workLimit: 'wl', attempts: 0, outcome: null, failureReason: null });
    expect(view.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(view.requirements).toEqual({ pools: [{ name: 'gpu', units: 1 }], quotas: [], budgets: [] });
    expect(view.subscribers.map((s: { subscriberId: string }) => s.subscriberId)).toEqual(['sub-1']);
    const other = await server.api('POST', '/tasks', { body: { ...body, input: { a: 2 } }, idem: idem() });
    expect(other.statusCode).toBe(409);
    expect(other.body.error.code).toBe('TASK_KEY_CONFLICT');
    // The delivery carries the taskId and the input.
    const messages = (await server.api('GET', `/mailboxes/${box}/messages?state=READY`)).body.items;
    expect(messages.map((m: { payload: unknown }) => m.payload)).toContainEqual({ taskId: first.body.taskId, input: { a: 1, b: [1, 2] } });
    await drain();
  });

  it.each([
    [{ requirements: { pools: [{ name: 'nope', units: 1 }] } }, 404, 'NOT_FOUND'],
    [{ requirements: { quotas: [{ name: 'nope', units: 1 }] } }, 404, 'NOT_FOUND'],
    [{ requirements: { budgets: [{ name: 'nope', reserveMinor: '5' }] } }, 404, 'NOT_FOUND'],
    [{ workLimit: 'nope' }, 404, 'NOT_FOUND'],
    [{ mailboxId: unknownId }, 404, 'NOT_FOUND'],
    [{ requirements: { pools: [{ name: 'gpu', units: 3 }] } }, 400, 'VALIDATION_FAILED'],
    [{ requirements: { quotas: [{ name: 'q', units: 11 }] } }, 400, 'VALIDATION_FAILED'],
    [{ requirements: { pools: [1, 2, 3, 4, 5].map(() => ({ name: 'gpu', units: 1 })) } }, 400, 'VALIDATION_FAILED'],
    [{ requirements: { pools: [{ name: 'gpu', units: 0 }] } }, 400, 'VALIDATION_FAILED'],
    [{ requirements: { budgets: [{ name: 'spend', reserveMinor: '-1' }] } }, 400, 'VALIDATION_FAILED'],
    [{ taskKey: '' }, 400, 'VALIDATION_FAILED'],
    [{ taskKey: 'x'.repeat(513) }, 400, 'VALIDATION_FAILED'],
    [{ scopeId: 'not-a-uuid' }, 400, 'VALIDATION_FAILED'],
  ])('refuses %j with %i %s', async (extra, status, code) => {
    const res = await submit(extra);
    expect(res.statusCode).toBe(status);
    expect(res.body.error.code).toBe(code);
  });

  it('accepts known requirement names and needs an Idempotency-Key and coordination_write', async () => {
    const ok = await submit({ requirements: { pools: [{ name: 'gpu', units: 2 }], quotas: [{ name: 'q', units: 10 }], budgets: [{ name: 'spend', reserveMinor: '100' }] }, workLimit: 'wl' });
    expect(ok.statusCode).toBe(201);
    const noKey = await server.api('POST', '/tasks', { body: { scopeId, mailboxId: box, taskKey: key() } });
    expect(noKey.body.error.code).toBe('IDEMPOTENCY_KEY_REQUIRED');
    const reader = await server.newKey({ permissions: ['coordination_read'] });
    const denied = await server.api('POST', '/tasks', { key: reader, body: { scopeId, mailboxId: box, taskKey: key() }, idem: idem() });
    expect(denied.statusCode).toBe(403);
    expect(denied.body.error.code).toBe('FORBIDDEN');
    expect((await server.api('GET', `/tasks/${ok.body.taskId}`, { key: reader })).statusCode).toBe(200);
    expect((await server.api('POST', `/tasks/${ok.body.taskId}/cancel`, { key: reader, body: {} })).statusCode).toBe(403);
    expect((await server.api('GET', `/ops/tasks/${ok.body.taskId}`, { key: reader })).statusCode).toBe(403);
    await drain();
  });

  it('an idempotent replay answers the first reply', async () => {
    const k = idem();
    const body = { scopeId, mailboxId: box, taskKey: key(), input: 1 };
    const first = await server.api('POST', '/tasks', { body, idem: k });
    const replay = await server.api('POST', '/tasks', { body, idem: k });
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual(first.body);
    await drain();
  });

  it('404 for unknown tasks on every route', async () => {
    expect((await server.api('GET', `/tasks/${unknownId}`)).statusCode).toBe(404);
    expect((await server.api('POST', `/tasks/${unknownId}/cancel`, { body: {} })).statusCode).toBe(404);
    expect((await server.api('POST', `/tasks/${unknownId}/join`, { body: { subscriberId: 'x', scopeId } })).statusCode).toBe(404);
    expect((await server.api('POST', `/tasks/${unknownId}/detach`, { body: { subscriberId: 'x' } })).statusCode).toBe(404);
    expect((await server.api('GET', `/ops/tasks/${unknownId}`)).statusCode).toBe(404);
  });

  it('join is idempotent; detach of the last subscriber does not cancel', async () => {
    const { taskId } = (await submit()).body;
    const join = () => server.api('POST', `/tasks/${taskId}/join`, { body: { subscriberId: 'a', scopeId } });
    expect((await join()).body).toEqual({ taskId, state: 'PENDING' });
    expect((await join()).statusCode).toBe(200);
    expect((await get(taskId)).subscribers).toHaveLength(1);
    const detach = await server.api('POST', `/tasks/${taskId}/detach`, { body: { subscriberId: 'a' } });
    expect(detach.body).toEqual({ taskId, state: 'PENDING', detached: true });
    expect((await server.api('POST', `/tasks/${taskId}/detach`, { body: { subscriberId: 'a' } })).body.detached).toBe(false);
    const view = await get(taskId);
    expect(view.state).toBe('PENDING');
    expect(view.subscribers).toEqual([]);
    expect((await server.api('POST', `/tasks/${taskId}/join`, { body: { subscriberId: 'a' } })).statusCode).toBe(400);
    await drain();
  });

  it('recv + complete on the task mailbox: RUNNING, then SUCCEEDED with the outcome; cancel of a terminal task is 409', async () => {
    const { taskId } = (await submit({ input: { job: 'x' } })).body;
    const delivery = await recv();
    expect(delivery.statusCode).toBe(200);
    expect(delivery.body.payload).toEqual({ taskId, input: { job: 'x' } });
    expect(await get(taskId)).toMatchObject({ state: 'RUNNING', attempts: 1 });
    const done = await server.api('POST', `/messages/${delivery.body.messageId}/complete`, { body: { token: delivery.body.token, result: { payload: { answer: 42 } } } });
    expect(done.statusCode).toBe(200);
    expect(await get(taskId)).toMatchObject({ state: 'SUCCEEDED', outcome: { answer: 42 }, failureReason: null });
    const cancel = await server.api('POST', `/tasks/${taskId}/cancel`, { body: { reason: 'late' } });
    expect(cancel.statusCode).toBe(409);
    expect(cancel.body.error.code).toBe('CONFLICT');
    expect(cancel.body.error.message).toContain('SUCCEEDED');
    const debug = await server.api('GET', `/ops/tasks/${taskId}`);
    expect(debug.statusCode).toBe(200);
    expect(debug.body.task.state).toBe('SUCCEEDED');
    expect(debug.body.messages[0]).toMatchObject({ id: delivery.body.messageId, state: 'ACKED' });
    expect(debug.body.attempts).toEqual([expect.objectContaining({ messageId: delivery.body.messageId, attempt: 1, holder: 'worker', holderSession: 's1', leaseExpiresAt: delivery.body.leaseExpiresAt })]);
    expect(debug.body.events.map((e: { type: string }) => e.type)).toEqual(['task.submitted', 'task.running', 'task.succeeded']);
  });

  it('nack with retry returns the task to PENDING; nack without retry makes it FAILED', async () => {
    const { taskId } = (await submit()).body;
    const first = (await recv()).body;
    expect((await server.api('POST', `/messages/${first.messageId}/nack`, { body: { token: first.token, retry: true } })).body.state).toBe('READY');
    expect((await get(taskId)).state).toBe('PENDING');
    const second = (await recv()).body;
    expect(second.messageId).toBe(first.messageId);
    expect((await server.api('POST', `/messages/${second.messageId}/nack`, { body: { token: second.token, retry: false } })).body.state).toBe('DEAD');
    expect(await get(taskId)).toMatchObject({ state: 'FAILED', failureReason: 'NACKED', attempts: 2 });
  });

  it('lease expiry returns it to PENDING', async () => {
    const { taskId } = (await submit()).body;
    await recv();
    expect((await get(taskId)).state).toBe('RUNNING');
    await server.admin('POST', '/clock/advance', { ms: 31_000 });
    expect((await get(taskId)).state).toBe('PENDING');
    await drain();
  });

  it('cancel of a PENDING task cancels its delivery; of a RUNNING one kills the token', async () => {
    const pending = (await submit()).body.taskId;
    const res = await server.api('POST', `/tasks/${pending}/cancel`, { body: { reason: 'not needed' } });
    expect(res.body).toEqual({ taskId: pending, state: 'CANCELLED' });
    expect((await server.api('GET', `/mailboxes/${box}/messages?state=READY`)).body.items).toEqual([]);
    expect((await server.api('POST', `/tasks/${pending}/cancel`, { body: {} })).statusCode).toBe(409);

    const running = (await submit()).body.taskId;
    const d = (await recv()).body;
    expect((await server.api('POST', `/tasks/${running}/cancel`, { body: {} })).statusCode).toBe(200);
    const late = await server.api('POST', `/messages/${d.messageId}/complete`, { body: { token: d.token } });
    expect(late.body.error.code).toBe('LEASE_LOST');
    expect((await get(running)).state).toBe('CANCELLED');
    expect((await server.api('POST', `/tasks/${running}/cancel`, { body: { reason: 'x'.repeat(513) } })).statusCode).toBe(400);
  });

  it('a deadline that passes before success makes the task EXPIRED and cancels its READY delivery', async () => {
    const deadline = new Date(server.clock.now() + 60_000).toISOString();
    const { taskId } = (await submit({ deadline })).body;
    expect((await get(taskId)).deadline).toBe(deadline);
    await server.admin('POST', '/clock/advance', { ms: 60_000 });
    expect(await get(taskId)).toMatchObject({ state: 'EXPIRED' });
    expect((await recv()).statusCode).toBe(204);
    const debug = (await server.api('GET', `/ops/tasks/${taskId}`)).body;
    expect(debug.messages[0].state).toBe('CANCELLED');
    expect(debug.events.map((e: { type: string }) => e.type)).toContain('task.expired');
  });

  it('lists with scope and state filters and paging', async () => {
    const otherScope = '33333333-3333-4333-8333-333333333333';
    const a = (await submit({ scopeId: otherScope })).body.taskId;
    const b = (await submit({ scopeId: otherScope })).body.taskId;
    await server.api('POST', `/tasks/${b}/cancel`, { body: {} });
    const all = (await server.api('GET', `/tasks?scopeId=${otherScope}`)).body.items.map((t: { id: string }) => t.id);
    expect(all).toEqual([a, b]);
    const cancelled = (await server.api('GET', `/tasks?scopeId=${otherScope}&state=CANCELLED,FAILED`)).body.items.map((t: { id: string }) => t.id);
    expect(cancelled).toEqual([b]);
    const page1 = (await server.api('GET', `/tasks?scopeId=${otherScope}&limit=1`)).body;
    expect(page1.items.map((t: { id: string }) => t.id)).toEqual([a]);
    const page2 = (await server.api('GET', `/tasks?scopeId=${otherScope}&limit=1&cursor=${page1.nextCursor}`)).body;
    expect(page2.items.map((t: { id: string }) => t.id)).toEqual([b]);
    expect((await server.api('GET', '/tasks?state=BOGUS')).statusCode).toBe(400);
    expect((await server.api('GET', '/tasks?cursor=bogus')).statusCode).toBe(400);
    await drain();
  });
});
