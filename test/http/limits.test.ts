import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { allEvents, idem, startTestServer, type TestServer } from '../support/server';

const scopeId = '11111111-1111-4111-8111-111111111111';

describe.each(storeTargets())('space limits over HTTP on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const opened = await target.open();
    server = await startTestServer(opened.store);
    close = async () => {
      await server.close();
      await opened.close();
    };
  });
  afterAll(async () => close());

  const put = (body: unknown) => server.api('PUT', '/limits', { body });
  const mailbox = async (name: string, backlogLimit = 1000) => (await server.api('POST', '/mailboxes', { body: { name, backlogLimit }, idem: idem() })).body.id as string;
  const send = (box: string, payload: unknown = { n: 1 }) => server.api('POST', `/mailboxes/${box}/messages`, { body: { scopeId, payload }, idem: idem() });

  it('GET /limits shows the defaults, with the TEAM plan rate as requestsPerMinute', async () => {
    const got = await server.api('GET', '/limits');
    expect(got.statusCode).toBe(200);
    expect(got.body).toEqual({ requestsPerMinute: 3000, maxBacklog: 1000, maxPayloadBytes: 65536, maxLeaseSeconds: 600, maxPendingWaiters: 10000, maxArmedTimers: 10000 });
  });

  it('PUT /limits sets what it names, keeps the rest, emits space.limits_updated, and GET shows it', async () => {
    const set = await put({ maxBacklog: 5000, maxLeaseSeconds: 120 });
    expect(set.statusCode).toBe(200);
    expect(set.body).toMatchObject({ maxBacklog: 5000, maxLeaseSeconds: 120, maxPayloadBytes: 65536, requestsPerMinute: 3000 });
    expect((await put({ maxPendingWaiters: 7 })).body).toMatchObject({ maxBacklog: 5000, maxLeaseSeconds: 120, maxPendingWaiters: 7 });
    expect((await server.api('GET', '/limits')).body).toMatchObject({ maxBacklog: 5000, maxLeaseSeconds: 120, maxPendingWaiters: 7 });
    const updated = (events: { type: string; data: { changed: { maxPendingWaiters?: number } } }[]) => events.filter((e) => e.type === 'space.limits_updated');
    const events = updated(await allEvents(server, (all) => updated(all).some((e) => e.data.changed.maxPendingWaiters === 7)));
    expect(events.at(-1)).toMatchObject({ aggregate: { type: 'space', id: server.spaceId }, data: { changed: { maxPendingWaiters: 7 } } });
    await put({ maxBacklog: 1000, maxLeaseSeconds: 600, maxPendingWaiters: 10000 });
  });

  it('refuses a value above the plan ceiling with 403 ENTITLEMENT_EXCEEDED and sets nothing', async () => {
    const over = await put({ requestsPerMinute: 3001, maxBacklog: 2000 });
    expect(over.statusCode).toBe(403);
    expect(over.body.error.code).toBe('ENTITLEMENT_EXCEEDED');
    expect((await server.api('GET', '/limits')).body.maxBacklog).toBe(1000);
    expect((await put({ requestsPerMinute: 100 })).body.requestsPerMinute).toBe(100);
  });

  it('refuses out-of-bounds values, unknown fields and an empty body with 400 VALIDATION_FAILED', async () => {
    for (const body of [{ maxBacklog: 0 }, { maxBacklog: 1_000_001 }, { maxLeaseSeconds: 4 }, { maxPayloadBytes: 65_537 }, { maxBacklog: 1.5 }, { maxBacklogs: 10 }, {}]) {
      const res = await put(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    }
  });

  it('needs usage_read to read and resource_config to set', async () => {
    const writer = await server.newKey({ permissions: ['coordination_write'] });
    expect((await server.api('GET', '/limits', { key: writer })).statusCode).toBe(403);
    expect((await server.api('PUT', '/limits', { key: writer, body: { maxBacklog: 10 } })).statusCode).toBe(403);
  });

  it('maxBacklog counts READY plus CLAIMED messages across the whole space: 429 BACKLOG_FULL', async () => {
    await put({ maxBacklog: 3 });
    const a = await mailbox('limits-a');
    const b = await mailbox('limits-b');
    expect((await send(a)).statusCode).toBe(201);
    expect((await send(b)).statusCode).toBe(201);
    const claimed = await server.api('POST', `/mailboxes/${a}/recv`, { body: { scopeId, holder: 'h', holderSession: 's' } });
    expect(claimed.statusCode).toBe(200);
    expect((await send(b)).statusCode).toBe(201);
    const full = await send(a);
    expect(full.statusCode).toBe(429);
    expect(full.body.error.code).toBe('BACKLOG_FULL');
    expect(full.body.error.message).toContain('maxBacklog 3');
    // A finished message no longer counts.
    await server.api('POST', `/messages/${claimed.body.messageId}/complete`, { body: { token: claimed.body.token } });
    expect((await send(a)).statusCode).toBe(201);
    // Raising the limit lets sends in again; a task's delivery counts the same way.
    expect((await send(b)).statusCode).toBe(429);
    const task = await server.api('POST', '/tasks', { body: { scopeId, mailboxId: a, taskKey: 'over-backlog' }, idem: idem() });
    expect(task.statusCode).toBe(429);
    expect((await server.api('GET', '/tasks?limit=100')).body.items.some((t: { taskKey: string }) => t.taskKey === 'over-backlog')).toBe(false);
    await put({ maxBacklog: 1000 });
    expect((await send(b)).statusCode).toBe(201);
  });

  it('maxLeaseSeconds shortens the lease recv, admit and renew grant', async () => {
    await put({ maxLeaseSeconds: 10 });
    const box = await mailbox('limits-lease');
    await send(box);
    const got = await server.api('POST', `/mailboxes/${box}/recv`, { body: { scopeId, holder: 'h', holderSession: 's', leaseSeconds: 300 } });
    expect(Date.parse(got.body.leaseExpiresAt) - server.clock.now()).toBe(10_000);
    const renewed = await server.api('POST', `/messages/${got.body.messageId}/renew`, { body: { token: got.body.token, leaseSeconds: 600 } });
    expect(Date.parse(renewed.body.leaseExpiresAt) - server.clock.now()).toBe(10_000);
    await server.api('POST', '/tasks', { body: { scopeId, mailboxId: box, taskKey: 'short-lease' }, idem: idem() });
    const admitted = await server.api('POST', '/tasks/admit', { body: { scopeId, mailboxId: box, holder: 'h', holderSession: 's', leaseSeconds: 60 }, idem: idem() });
    expect(Date.parse(admitted.body.leaseExpiresAt) - server.clock.now()).toBe(10_000);
    await put({ maxLeaseSeconds: 600 });
  });

  it('maxPayloadBytes refuses a larger payload with 413 PAYLOAD_TOO_LARGE', async () => {
    await put({ maxPayloadBytes: 100 });
    const box = await mailbox('limits-payload');
    expect((await send(box, { s: 'x'.repeat(50) })).statusCode).toBe(201);
    const big = await send(box, { s: 'x'.repeat(200) });
    expect(big.statusCode).toBe(413);
    expect(big.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    await put({ maxPayloadBytes: 65536 });
  });
});
