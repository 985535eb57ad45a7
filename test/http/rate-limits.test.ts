import { monthOf } from '@baton/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { idem, openTestServer, startMs, type CallOptions, type Reply, type TestServer } from '../support/server';

const scopeId = '11111111-1111-4111-8111-111111111111';
const holder = { holder: 'worker', holderSession: 's1' };

/** A fresh organization with one space and an all-permission key: its own counts, untouched by other tests. */
interface Tenant {
  orgId: string;
  spaceId: string;
  call(method: 'GET' | 'POST' | 'PUT', path: string, options?: CallOptions): Promise<Reply>;
}

describe.each(storeTargets())('request rates, operations and plan limits over HTTP on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;
  let tenants = 0;

  beforeAll(async () => {
    ({ server, close } = await openTestServer(target));
  });
  afterAll(async () => close());

  const tenant = async (plan: string, limits?: Record<string, number | null>, spaceName = 'main'): Promise<Tenant> => {
    const org = await server.admin('POST', '/orgs', { name: `t${++tenants}`, plan, ...(limits ? { limits } : {}) });
    expect(org.statusCode).toBe(201);
    const space = await server.admin('POST', `/orgs/${org.body.id}/spaces`, { name: spaceName });
    const key = (await server.admin('POST', `/orgs/${org.body.id}/keys`, { name: 'k' })).body.secret as string;
    const call = (method: 'GET' | 'POST' | 'PUT', path: string, options: CallOptions = {}) => {
      const headers: Record<string, string> = { authorization: `Bearer ${key}`, ...options.headers };
      if (options.idem !== undefined) headers['idempotency-key'] = options.idem;
      return server.inject(method, `/v1/spaces/${space.body.id}${path}`, headers, options.body);
    };
    return { orgId: org.body.id, spaceId: space.body.id, call };
  };
  const mailbox = async (t: Tenant) => (await t.call('POST', '/mailboxes', { body: { name: `box-${idem()}` }, idem: idem() })).body.id as string;
  const send = (t: Tenant, box: string, payload: unknown = 'job') => t.call('POST', `/mailboxes/${box}/messages`, { body: { scopeId, payload }, idem: idem() });
  const recv = (t: Tenant, box: string, extra: Record<string, unknown> = {}) => t.call('POST', `/mailboxes/${box}/recv`, { body: { scopeId, ...holder, ...extra } });
  const untilRefused = async (call: () => Promise<Reply>): Promise<{ passed: number; refusal: Reply }> => {
    for (let passed = 0; passed < 10_000; passed++) {
      const reply = await call();
      if (reply.statusCode === 429) return { passed, refusal: reply };
    }
    throw new Error('never refused');
  };
  const secondsToNextMinute = () => String(Math.ceil((60_000 - (server.clock.now() % 60_000)) / 1000));

  it("a space's requestsPerMinute refuses ordinary calls past 80 % and recovery calls past all of it, until the next minute", async () => {
    const t = await tenant('TEAM');
    expect((await t.call('PUT', '/limits', { body: { requestsPerMinute: 10 } })).statusCode).toBe(200);
    const { passed, refusal } = await untilRefused(() => t.call('GET', '/limits'));
    expect(passed).toBe(7); // the PUT was the 1st of 8
    expect(refusal.body.error).toMatchObject({ code: 'RATE_LIMITED' });
    expect(refusal.headers['retry-after']).toBe(secondsToNextMinute());
    // Recovery calls (a nack of an unknown message answers 404, but it is let through) use the last 20 %.
    const nack = () => t.call('POST', `/messages/${crypto.randomUUID()}/nack`, { body: { token: 'x', retry: true } });
    const recovery = await untilRefused(nack);
    expect(recovery.passed).toBe(2);
    expect(recovery.refusal.body.error.code).toBe('RATE_LIMITED');
    server.clock.advance(60_000);
    expect((await t.call('GET', '/limits')).statusCode).toBe(200);
  });

  it("the organization's requests per minute hold across its spaces (SERVICE_RATE_LIMITED), 480 ordinary of Free's 600", async () => {
    const t = await tenant('FREE');
    const other = await server.admin('POST', `/orgs/${t.orgId}/spaces`, { name: 'second' });
    const spaces = [t.spaceId, other.body.id as string];
    let n = 0;
    const key = (await server.admin('POST', `/orgs/${t.orgId}/keys`, { name: 'k2' })).body.secret as string;
    const get = () => server.inject('GET', `/v1/spaces/${spaces[n++ % 2]}/limits`, { authorization: `Bearer ${key}` });
    const { passed, refusal } = await untilRefused(get);
    expect(passed).toBe(480);
    expect(refusal.body.error.code).toBe('SERVICE_RATE_LIMITED');
    expect((await t.call('GET', '/usage')).statusCode).toBe(429);
    const cancel = () => t.call('POST', `/allowance-waiters/${crypto.randomUUID()}/cancel`);
    expect((await untilRefused(cancel)).passed).toBe(120);
    server.clock.advance(60_000);
  });

  it('a batch counts as its items', async () => {
    const t = await tenant('TEAM');
    await t.call('PUT', '/limits', { body: { requestsPerMinute: 100 } });
    const box = await mailbox(t);
    const batch = (count: number) =>
      t.call('POST', `/mailboxes/${box}/messages/send-batch`, { body: { messages: Array.from({ length: count }, () => ({ scopeId, payload: 1 })) }, idem: idem() });
    expect((await batch(50)).statusCode).toBe(200); // 52 used with the PUT and the mailbox
    expect((await batch(29)).body.error?.code).toBe('RATE_LIMITED');
    expect((await batch(28)).statusCode).toBe(200); // 80
    server.clock.advance(60_000);
  });

  it('successful renewals and empty claims that waited a second are given back; empty claims without a wait are not', async () => {
    const t = await tenant('TEAM');
    await t.call('PUT', '/limits', { body: { requestsPerMinute: 10 } });
    const box = await mailbox(t); // 2 used
    await send(t, box); // 3
    const d = (await recv(t, box)).body; // 4
    for (let i = 0; i < 20; i++) expect((await t.call('POST', `/messages/${d.messageId}/renew`, { body: { token: d.token } })).statusCode).toBe(200);
    const waited = recv(t, box, { waitMs: 1_000 });
    await new Promise((r) => setTimeout(r, 50));
    server.clock.advance(1_000);
    expect((await waited).statusCode).toBe(204);
    expect((await recv(t, box)).statusCode).toBe(204); // 5: no wait, counted
    const { passed } = await untilRefused(() => t.call('GET', '/limits'));
    expect(passed).toBe(3); // 6, 7, 8
    server.clock.advance(60_000);
  });

  it('counts operations as docs/api.md defines them and GET /usage shows them with the load and the plan', async () => {
    const t = await tenant('TEAM');
    const box = await mailbox(t); // 1
    const sendKey = idem();
    await t.call('POST', `/mailboxes/${box}/messages`, { body: { scopeId, payload: 'a' }, idem: sendKey }); // 2
    const replay = await t.call('POST', `/mailboxes/${box}/messages`, { body: { scopeId, payload: 'a' }, idem: sendKey });
    expect(replay.headers['idempotent-replayed']).toBe('true'); // a replay: not counted
    await t.call('POST', `/mailboxes/${box}/messages/send-batch`, { body: { messages: [{ scopeId, payload: 'b' }, { scopeId, payload: 'c' }] }, idem: idem() }); // 4
    const d = (await recv(t, box)).body; // 5
    await t.call('POST', `/messages/${d.messageId}/renew`, { body: { token: d.token } }); // renewal: not counted
    expect((await t.call('POST', `/messages/${d.messageId}/complete`, { body: { token: 'stale' } })).statusCode).toBe(409); // failed: not counted
    await t.call('GET', `/mailboxes/${box}/messages`); // read: not counted
    await recv(t, `${crypto.randomUUID()}`); // 404: not counted
    await t.call('POST', `/messages/${d.messageId}/complete`, { body: { token: d.token } }); // 6
    await recv(t, box); // 7: a second message claimed and held
    const usage = await t.call('GET', '/usage');
    expect(usage.statusCode).toBe(200);
    expect(usage.body).toMatchObject({
      month: monthOf(startMs),
      operations: 7,
      operationsLimit: 15_000_000,
      activeTasks: 0,
      activeRuns: 0,
      liveLeases: 1,
      plan: 'TEAM',
      planLimits: { agentsAtOnce: 1_000, activeTasks: 100_000, requestsPerMinute: 3_000, retentionDays: 30 },
    });
    expect(usage.body.requestsThisMinute).toBeGreaterThanOrEqual(12);
    // Synced to the store, the count stays the same: nothing counted twice or lost.
    await server.baton.deps.runDueWork();
    expect((await t.call('GET', '/usage')).body.operations).toBe(7);
  });

  it("stops a Free organization's new work at its monthly operations (OPERATIONS_EXHAUSTED to the next month) and lets running work finish", async () => {
    const t = await tenant('FREE');
    const box = await mailbox(t);
    await send(t, box);
    const d = (await recv(t, box)).body;
    await server.baton.deps.store.transaction((tx) => tx.usage.addOperations(monthOf(server.clock.now()), new Map([[t.orgId, 100_000 - 4]])));
    await server.baton.deps.runDueWork();
    expect((await send(t, box)).statusCode).toBe(201); // the 100,000th
    const refused = await send(t, box);
    expect(refused.statusCode).toBe(429);
    expect(refused.body.error.code).toBe('OPERATIONS_EXHAUSTED');
    const now = new Date(server.clock.now());
    const nextMonthMs = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
    expect(refused.headers['retry-after']).toBe(String(Math.ceil((nextMonthMs - server.clock.now()) / 1000)));
    expect((await recv(t, box)).body.error.code).toBe('OPERATIONS_EXHAUSTED');
    expect((await t.call('POST', `/messages/${d.messageId}/complete`, { body: { token: d.token } })).statusCode).toBe(200);
    expect((await t.call('GET', '/usage')).body).toMatchObject({ operations: 100_001, operationsLimit: 100_000 });
  });

  it('refuses claims past the agents at once (CONCURRENCY_LIMITED) and submits past the active tasks (PLAN_LIMIT_REACHED), each with Retry-After 1', async () => {
    const t = await tenant('ENTERPRISE', { agentsAtOnce: 2, activeTasks: 3, requestsPerMinute: null });
    const box = await mailbox(t);
    for (let i = 0; i < 3; i++) await send(t, box);
    const first = (await recv(t, box)).body;
    await recv(t, box);
    const refused = await recv(t, box);
    expect(refused.body.error.code).toBe('CONCURRENCY_LIMITED');
    expect(refused.headers['retry-after']).toBe('1');
    await t.call('POST', `/messages/${first.messageId}/complete`, { body: { token: first.token } });
    await server.baton.deps.runDueWork(); // the load is read again (at most a second old in service)
    expect((await recv(t, box)).statusCode).toBe(200);

    // Live claims are leases too (docs/api.md "Limits"): 2 claimed messages are held now.
    const claimed = await t.call('POST', '/claims', { body: { claimKey: 'k', scopeId, holder: 'h', holderSession: 's' }, idem: idem() });
    expect(claimed.body.error.code).toBe('CONCURRENCY_LIMITED');

    const taskBox = await mailbox(t);
    const submit = () => t.call('POST', '/tasks', { body: { scopeId, mailboxId: taskBox, taskKey: idem(), input: null }, idem: idem() });
    for (let i = 0; i < 3; i++) expect((await submit()).statusCode).toBe(201);
    const tooMany = await submit();
    expect(tooMany.body.error.code).toBe('PLAN_LIMIT_REACHED');
    expect(tooMany.body.error.message).toMatch(/active tasks/);
    expect(tooMany.headers['retry-after']).toBe('1');
    const tasks = (await t.call('GET', '/tasks')).body.items as { id: string }[];
    await t.call('POST', `/tasks/${tasks[0]!.id}/cancel`, { body: {} });
    await server.baton.deps.runDueWork();
    expect((await t.call('GET', '/usage')).body).toMatchObject({ activeTasks: 2 });
    expect((await submit()).statusCode).toBe(201);
  });

  it('judges a submit-batch item by item against the active tasks: it creates what the plan leaves, joins go on, the rest answer PLAN_LIMIT_REACHED', async () => {
    const t = await tenant('ENTERPRISE', { activeTasks: 5, requestsPerMinute: null });
    const box = await mailbox(t);
    const task = (taskKey: string) => ({ scopeId, mailboxId: box, taskKey, input: null });
    expect((await t.call('POST', '/tasks', { body: task('kept'), idem: idem() })).statusCode).toBe(201);
    await server.baton.deps.runDueWork();
    // 4 of 5 left: the first four new keys are created, the joins of existing keys go on, the rest are refused.
    const keys = ['a', 'kept', 'b', 'c', 'a', 'd', 'e', 'f'];
    const reply = await t.call('POST', '/tasks/submit-batch', { body: { tasks: keys.map(task) }, idem: idem() });
    expect(reply.statusCode).toBe(200);
    const items = reply.body.items as { status: number; body: { created?: boolean; error?: { code: string; message: string } } }[];
    expect(items.map((i) => i.status)).toEqual([201, 200, 201, 201, 200, 201, 429, 429]);
    expect(items[6]!.body.error).toMatchObject({ code: 'PLAN_LIMIT_REACHED', message: expect.stringMatching(/active tasks/) });
    expect((await t.call('GET', '/usage')).body).toMatchObject({ activeTasks: 5 });
    // With none left the whole batch is refused, as POST /tasks is.
    const refused = await t.call('POST', '/tasks/submit-batch', { body: { tasks: [task('g')] }, idem: idem() });
    expect(refused.statusCode).toBe(429);
    expect(refused.body.error.code).toBe('PLAN_LIMIT_REACHED');
  });
});
