import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { idem, startTestServer, type Reply, type TestServer } from '../support/server';

/**
 * Retention through the HTTP app on a manual clock (docs/design/0017-retention.md): the background pass run just
 * before and just past each window. The test server's organization is on TEAM (30 days); a second
 * organization on FREE (7 days) shows that windows are per organization.
 */
const dayMs = 24 * 60 * 60 * 1000;
const scopeId = '11111111-1111-4111-8111-111111111111';

describe.each(storeTargets())('retention over HTTP on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;

  beforeEach(async () => {
    const opened = await target.open();
    server = await startTestServer(opened.store);
    close = async () => {
      await server.close();
      await opened.close();
    };
  });
  afterEach(async () => close());

  const sweep = () => server.baton.deps.runDueWork();

  /** A FREE organization with one space, and a call into that space with its key. */
  async function freeTenant(): Promise<(method: 'GET' | 'POST', path: string, body?: unknown) => Promise<Reply>> {
    const org = await server.admin('POST', '/orgs', { name: `free-${randomUUID()}`, plan: 'FREE' });
    const space = await server.admin('POST', `/orgs/${org.body.id}/spaces`, { name: 'free' });
    const key = (await server.admin('POST', `/orgs/${org.body.id}/keys`, { name: 'k' })).body.secret as string;
    return (method, path, body) =>
      server.inject(method, `/v1/spaces/${space.body.id}${path}`, { authorization: `Bearer ${key}`, ...(method === 'POST' ? { 'idempotency-key': idem() } : {}) }, body);
  }

  /** Submits a task to a new mailbox and runs it to SUCCEEDED: its id, and a PENDING task's beside it. */
  async function finishedAndPending(call: (method: 'GET' | 'POST', path: string, body?: unknown) => Promise<Reply>): Promise<{ done: string; pending: string }> {
    const box = (await call('POST', '/mailboxes', { name: `box-${randomUUID()}` })).body.id as string;
    const submit = async (taskKey: string) => (await call('POST', '/tasks', { scopeId, mailboxId: box, taskKey, input: { secret: taskKey } })).body.taskId as string;
    const done = await submit('done');
    const delivery = (await call('POST', `/mailboxes/${box}/recv`, { scopeId, holder: 'w', holderSession: 's' })).body;
    expect((await call('POST', `/messages/${delivery.messageId}/complete`, { token: delivery.token, result: { payload: { answer: 42 } } })).statusCode).toBe(200);
    const pending = await submit('pending');
    return { done, pending };
  }

  const teamCall = (method: 'GET' | 'POST', path: string, body?: unknown) => server.api(method, path, { body, ...(method === 'POST' ? { idem: idem() } : {}) });

  it('tombstones a finished task after its organization\'s window, never before; live tasks are never touched', async () => {
    const free = await freeTenant();
    const team = await finishedAndPending(teamCall);
    const freeTasks = await finishedAndPending(free);
    const teamTask = async (id: string) => (await teamCall('GET', `/tasks/${id}`)).body;
    const freeTask = async (id: string) => (await free('GET', `/tasks/${id}`)).body;

    server.clock.advance(7 * dayMs - 1);
    await sweep();
    expect(await freeTask(freeTasks.done)).toMatchObject({ state: 'SUCCEEDED', input: { secret: 'done' }, outcome: { answer: 42 }, tombstoned: false });

    server.clock.advance(1);
    await sweep();
    // FREE's 7 days are up: state and reason stay, input and outcome are cleared.
    expect(await freeTask(freeTasks.done)).toMatchObject({ state: 'SUCCEEDED', failureReason: null, input: null, outcome: null, tombstoned: true });
    expect(await freeTask(freeTasks.pending)).toMatchObject({ state: 'PENDING', input: { secret: 'pending' }, tombstoned: false });
    // TEAM keeps 30 days.
    expect(await teamTask(team.done)).toMatchObject({ state: 'SUCCEEDED', outcome: { answer: 42 }, tombstoned: false });

    server.clock.advance(23 * dayMs - 1);
    await sweep();
    expect(await teamTask(team.done)).toMatchObject({ outcome: { answer: 42 }, tombstoned: false });
    server.clock.advance(1);
    await sweep();
    expect(await teamTask(team.done)).toMatchObject({ state: 'SUCCEEDED', input: null, outcome: null, tombstoned: true });
    expect(await teamTask(team.pending)).toMatchObject({ state: 'PENDING', input: { secret: 'pending' }, tombstoned: false });
    // The tombstone is still listed with its state.
    const listed = (await teamCall('GET', '/tasks?state=SUCCEEDED')).body.items;
    expect(listed).toContainEqual(expect.objectContaining({ id: team.done, state: 'SUCCEEDED', tombstoned: true }));
  });

  it('deletes a finished message after the window, never before; a READY one stays', async () => {
    const box = (await teamCall('POST', '/mailboxes', { name: 'plain' })).body.id as string;
    const send = async (payload: unknown) => (await teamCall('POST', `/mailboxes/${box}/messages`, { scopeId, payload })).body.id as string;
    const acked = await send({ n: 1 });
    const delivery = (await teamCall('POST', `/mailboxes/${box}/recv`, { scopeId, holder: 'w', holderSession: 's' })).body;
    expect(delivery.messageId).toBe(acked);
    expect((await teamCall('POST', `/messages/${acked}/complete`, { token: delivery.token })).statusCode).toBe(200);
    const ready = await send({ n: 2 });
    const ids = async () => ((await teamCall('GET', `/mailboxes/${box}/messages`)).body.items as { id: string }[]).map((m) => m.id);

    server.clock.advance(30 * dayMs - 1);
    await sweep();
    expect(await ids()).toEqual([acked, ready]);
    server.clock.advance(1);
    await sweep();
    expect(await ids()).toEqual([ready]);
  });

  it('deletes a released claim after the window, never before; the key\'s next claim still gets the next fencing token', async () => {
    const acquire = async () => (await teamCall('POST', '/claims', { claimKey: 'report-lock', scopeId, holder: 'w', holderSession: randomUUID(), leaseSeconds: 30 })).body;
    const first = await acquire();
    expect((await teamCall('POST', `/claims/${first.id}/release`, { token: first.token })).statusCode).toBe(200);

    server.clock.advance(30 * dayMs - 1);
    await sweep();
    expect(await teamCall('GET', `/claims/${first.id}`)).toMatchObject({ statusCode: 200, body: { state: 'RELEASED' } });
    server.clock.advance(1);
    await sweep();
    expect((await teamCall('GET', `/claims/${first.id}`)).statusCode).toBe(404);
    expect(await acquire()).toMatchObject({ state: 'HELD', fencingToken: first.fencingToken + 1 });
  });

  it('keeps the journal 30 days on a 7-day plan; a cursor before the start answers from the oldest event kept, truncated', async () => {
    const free = await freeTenant();
    const budget = (name: string) => free('POST', '/budgets', { name, currency: 'USD', scale: 2, limitMinor: '100' });
    const page = async (path: string, until: (body: any) => boolean = () => true) => {
      // On PostgreSQL an event is readable once every older writer has ended (other test files share the server): poll.
      for (let attempt = 0; ; attempt++) {
        const body = (await free('GET', path)).body;
        if (until(body) || attempt >= 100) return body;
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const names = (body: any) => body.items.map((e: any) => e.data.name ?? e.type);

    await budget('old-1');
    const first = await page('/events', (b) => b.items.length === 1);
    const cursor = first.nextCursor as string;
    await budget('old-2');
    server.clock.advance(10 * dayMs);
    await budget('young');
    const youngOnly = (b: any) => b.items.length === 1;
    const both = (b: any) => b.items.length === 2;

    server.clock.advance(20 * dayMs - 1);
    await sweep();
    // Past FREE's 7 days but not the journal's 30: nothing lost, so nothing truncated.
    const before = await page(`/events?cursor=${cursor}`, both);
    expect(before.items).toHaveLength(2);
    expect(before.truncated).toBeUndefined();

    server.clock.advance(1);
    await sweep();
    const after = await page(`/events?cursor=${cursor}`, youngOnly);
    expect(after.items.map((e: any) => e.data)).toEqual([expect.objectContaining({ name: 'young' })]);
    expect(after.truncated).toBe(true);
    const watched = await page(`/watch?cursor=${cursor}`, youngOnly);
    expect(watched.items).toHaveLength(1);
    expect(watched.truncated).toBe(true);
    // Following nextCursor, or starting without a cursor, is not truncated.
    const next = await page(`/events?cursor=${after.nextCursor}`);
    expect(next).toEqual({ items: [], nextCursor: after.nextCursor });
    const fromStart = await page('/events', youngOnly);
    expect(fromStart.truncated).toBeUndefined();
    expect(names(fromStart)).toHaveLength(1);
    // A cursor into what is kept reads on as before.
    expect((await page(`/watch?cursor=${fromStart.nextCursor}`)).truncated).toBeUndefined();
  });

  it('deletes webhook delivery audit after 365 days, never before', async () => {
    const attempt = {
      id: randomUUID(), spaceId: server.spaceId, destinationId: randomUUID(), eventId: '1', attempt: 1, status: 'FAILED' as const, httpStatus: 500, error: 'HTTP 500',
      responseBody: null, durationMs: 3, attemptedAt: server.clock.now(), nextAttemptAt: null,
    };
    await server.baton.deps.store.transaction((tx) => tx.deliveryAttempts.insert(attempt));
    const listed = async () => ((await server.api('GET', '/deliveries')).body.items as { id: string }[]).map((a) => a.id);

    server.clock.advance(365 * dayMs - 1);
    await sweep();
    expect(await listed()).toEqual([attempt.id]);
    server.clock.advance(1);
    await sweep();
    expect(await listed()).toEqual([]);
  });
});
