import { randomUUID } from 'node:crypto';
import { SystemClock } from '@baton/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLiveServer, type LiveServer } from '../support/live-server';
import { createClient, type BatonClient, type ClientOptions, BatonApiError, fetchTransport, type Transport, type TransportResponse } from '@baton-coordination/runtime';

let server: LiveServer;

const clientWith = (options: Partial<ClientOptions> = {}): BatonClient =>
  createClient({ baseUrl: server.baseUrl, apiKey: server.apiKey, spaceId: server.spaceId, timeoutMs: 5_000, retry: { baseDelayMs: 10, maxDelayMs: 50 }, ...options });

beforeAll(async () => {
  server = await startLiveServer({ clock: new SystemClock(), plan: 'TEAM', name: 'runtime-e2e' });
});

afterAll(async () => server?.close());

describe('client against a live server', () => {
  it('creates a budget, reserves and settles', async () => {
    const client = clientWith();
    const budget = await client.createBudget({ name: 'llm-spend', currency: 'USD', scale: 2, limitMinor: '10000' });
    const reservation = await client.reserve(budget.id, { scopeId: randomUUID(), holder: 'worker-1', amountMinor: '2500' });
    expect(reservation).toMatchObject({ budgetId: budget.id, state: 'ACTIVE', amountMinor: '2500' });
    const settled = await client.settle(budget.id, { reservationId: reservation.id, amountMinor: '1840', workKey: 'run-1-call-1' });
    expect(settled.replay).toBe(false);
    expect(settled.budget).toMatchObject({ settledMinor: '1840', reservedMinor: '660', availableMinor: '7500' });
    const voided = await client.voidReservation(budget.id, { reservationId: reservation.id, workKey: 'run-1-void' });
    expect(voided.reservation.state).toBe('VOIDED');
    expect((await client.getBudget(budget.id)).availableMinor).toBe('8160');
  });

  it('submits a task, admits it and completes it', async () => {
    const client = clientWith();
    const scopeId = randomUUID();
    const mailbox = await client.createMailbox({ name: 'reports' });
    const submitted = await client.submitTask({ scopeId, mailboxId: mailbox.id, taskKey: 'report-7', input: { doc: 7 } });
    expect(submitted).toMatchObject({ state: 'PENDING', created: true });
    const admitted = await client.admit({ scopeId, mailboxId: mailbox.id, holder: 'worker-1', holderSession: 'session-1', leaseSeconds: 60 });
    expect(admitted).toMatchObject({ taskId: submitted.taskId, attempt: 1, payload: { taskId: submitted.taskId, input: { doc: 7 } } });
    await client.renew(admitted!.messageId, { token: admitted!.token });
    expect(await client.complete(admitted!.messageId, { token: admitted!.token, result: { payload: { pages: 3 } } })).toEqual({ state: 'ACKED', resultMessageId: null });
    expect(await client.getTask(submitted.taskId)).toMatchObject({ state: 'SUCCEEDED', outcome: { pages: 3 } });
    // Nothing left: a short long poll answers 204, which is null.
    expect(await client.admit({ scopeId, mailboxId: mailbox.id, holder: 'worker-1', holderSession: 'session-1', waitMs: 50 })).toBeNull();
  });

  it('surfaces a 4xx as BatonApiError with its code and request id, without retrying', async () => {
    let attempts = 0;
    const counting: Transport = (request) => {
      attempts++;
      return fetchTransport(request);
    };
    const client = clientWith({ transport: counting });
    const budget = await client.createBudget({ name: 'small', currency: 'EUR', scale: 2, limitMinor: '100' });
    attempts = 0;
    const error = await client.reserve(budget.id, { scopeId: randomUUID(), holder: 'w', amountMinor: '101' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BatonApiError);
    expect(error).toMatchObject({ code: 'INSUFFICIENT_BUDGET', status: 409 });
    expect((error as BatonApiError).requestId).toEqual(expect.any(String));
    expect(attempts).toBe(1);

    const invalid = await client.reserve(budget.id, { scopeId: 'not-a-uuid', holder: 'w', amountMinor: '1' }).catch((e: unknown) => e);
    expect(invalid).toMatchObject({ code: 'VALIDATION_FAILED', status: 400, details: [expect.objectContaining({ path: 'body.scopeId' })] });

    const wrongKey = createClient({ baseUrl: server.baseUrl, apiKey: 'bk_unknown', spaceId: server.spaceId });
    await expect(wrongKey.getLimits()).rejects.toMatchObject({ code: 'UNAUTHENTICATED', status: 401 });
  });

  it('heals a dropped reply by an idempotent retry: the reserve is applied once', async () => {
    const replies: TransportResponse[] = [];
    let drop = true;
    // The request reaches the server and is applied; its reply is lost on the way back.
    const lossy: Transport = async (request) => {
      const response = await fetchTransport(request);
      replies.push(response);
      if (request.method === 'POST' && drop) {
        drop = false;
        throw new TypeError('socket hang up');
      }
      return response;
    };
    const client = clientWith({ transport: lossy });
    const budget = await clientWith().createBudget({ name: 'lossy', currency: 'USD', scale: 2, limitMinor: '10000' });
    const reservation = await client.reserve(budget.id, { scopeId: randomUUID(), holder: 'worker-1', amountMinor: '700' });

    expect(replies).toHaveLength(2);
    expect(replies[1]!.headers['idempotent-replayed']).toBe('true');
    expect(reservation.id).toBe(JSON.parse(replies[0]!.body).id);
    const after = await client.getBudget(budget.id);
    expect(after.reservedMinor).toBe('700');
    expect(after.reservations).toHaveLength(1);
  });

  it('reaches every route', async () => {
    const client = clientWith();
    const scopeId = randomUUID();
    expect((await client.listBudgets({ limit: 1 })).items).toHaveLength(1);

    const barrier = await client.createBarrier({ scopeId, target: 1 });
    expect((await client.arrive(barrier.id, { arrivalKey: 'a', epoch: 1 })).state).toBe('RELEASED');
    expect((await client.getBarrier(barrier.id, 1_000, { epoch: 1 })).state).toBe('RELEASED');
    expect((await client.nextEpoch(barrier.id, { epoch: 1 })).epoch).toBe(2);
    expect((await client.cancelBarrier(barrier.id)).state).toBe('CANCELLED');
    expect((await client.listBarriers({ state: ['CANCELLED', 'RELEASED'] })).items.map((b) => b.id)).toContain(barrier.id);

    const pool = await client.createPool({ name: 'gpu', capacity: 2 });
    expect((await client.getPool(pool.id)).available).toBe(2);
    expect((await client.listPools()).items).toHaveLength(1);
    const limit = await client.createWorkLimit({ name: 'reports', maxConcurrent: 1 });
    expect((await client.getWorkLimit(limit.id)).maxConcurrent).toBe(1);
    expect((await client.listWorkLimits()).items).toHaveLength(1);

    const allowance = await client.createAllowance({ name: 'tokens', unitsLimit: 10, windowSeconds: 60 });
    expect((await client.consume(allowance.id, { scopeId, units: 4, holder: 'w' })).units).toBe(4);
    const granted = await client.wait(allowance.id, { scopeId, units: 6, holder: 'w' });
    expect(granted.state).toBe('GRANTED');
    const waiter = await client.wait(allowance.id, { scopeId, units: 1, holder: 'w' });
    expect((await client.getWaiter(waiter.id, 50)).state).toBe('WAITING');
    expect((await client.cancelWaiter(waiter.id)).state).toBe('CANCELLED');
    expect((await client.cooldown(allowance.id, { seconds: 5 })).cooldownUntil).not.toBeNull();
    expect((await client.getAllowance(allowance.id)).usedUnits).toBe(10);
    expect((await client.listAllowances()).items).toHaveLength(1);

    const inbox = await client.createMailbox({ name: 'inbox' });
    await client.send(inbox.id, { scopeId, payload: { hello: 1 } });
    const delivery = await client.recv(inbox.id, { scopeId, holder: 'w', holderSession: 's' });
    expect(delivery?.payload).toEqual({ hello: 1 });
    expect((await client.nack(delivery!.messageId, { token: delivery!.token, retry: false })).state).toBe('DEAD');
    expect((await client.listMessages(inbox.id, { state: 'DEAD' })).items).toHaveLength(1);
    expect(await client.recv(inbox.id, { scopeId, holder: 'w', holderSession: 's' })).toBeNull();
    expect((await client.listMailboxes()).items.map((m) => m.name)).toContain('inbox');

    const task = await client.submitTask({ scopeId, mailboxId: inbox.id, taskKey: 'k', subscriberId: 'alice' });
    expect((await client.joinTask(task.taskId, { subscriberId: 'bob', scopeId })).state).toBe('PENDING');
    expect((await client.detachTask(task.taskId, { subscriberId: 'alice' })).detached).toBe(true);
    expect((await client.listTasks({ scopeId, state: ['PENDING'] })).items.map((t) => t.id)).toEqual([task.taskId]);
    expect((await client.cancelTask(task.taskId, { reason: 'not needed' })).state).toBe('CANCELLED');
    expect((await client.getTaskDebug(task.taskId)).task.failureReason).toBe('not needed');

    expect((await client.setLimits({ maxLeaseSeconds: 120 })).maxLeaseSeconds).toBe(120);
    expect((await client.getLimits()).maxLeaseSeconds).toBe(120);
    const run = await client.createRun({ name: 'e2e' });
    const child = await client.createRun({ parentScopeId: run.scopeId });
    expect((await client.getRun(run.scopeId)).childRuns.items.map((r) => r.scopeId)).toEqual([child.scopeId]);
    expect((await client.cancelRun(run.scopeId)).state).toBe('CANCELLED');
    expect((await client.getRun(child.scopeId)).state).toBe('CANCELLED');
    const usage = await client.getUsage();
    expect(usage).toMatchObject({ plan: 'TEAM', operationsLimit: 15_000_000, planLimits: { requestsPerMinute: 3_000 } });
    expect(usage.operations).toBeGreaterThan(0);
    const events = await client.listEvents({ limit: 500 });
    expect(events.items.length).toBeGreaterThan(0);
    expect(events.nextCursor).toMatch(/^\d+$/);
  });
});
