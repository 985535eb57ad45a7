import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { allEvents, idem, openTestServer, type Reply, type TestServer } from '../support/server';

describe.each(storeTargets())('runs over HTTP on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;
  let box: string;

  beforeAll(async () => {
    ({ server, close } = await openTestServer(target));
    box = (await server.api('POST', '/mailboxes', { body: { name: 'run-work' }, idem: idem() })).body.id;
  });
  afterAll(async () => close());

  const create = (body: Record<string, unknown>) => server.api('POST', '/runs', { body, idem: idem() });
  const end = (scopeId: string, how: 'complete' | 'cancel') => server.api('POST', `/runs/${scopeId}/${how}`, { idem: idem() });
  const view = async (scopeId: string, query = '') => (await server.api('GET', `/runs/${scopeId}${query}`)).body;
  const submit = async (scopeId: string) => (await server.api('POST', '/tasks', { body: { scopeId, mailboxId: box, taskKey: randomUUID(), input: null }, idem: idem() })).body.taskId as string;
  const task = async (id: string) => (await server.api('GET', `/tasks/${id}`)).body;

  it('creates a run (201), answers a repeat with 200 and another body with 409, and journals run.created', async () => {
    const scopeId = randomUUID();
    const created = await create({ scopeId, name: 'triage' });
    expect(created.statusCode).toBe(201);
    expect(created.body).toMatchObject({ scopeId, parentScopeId: null, name: 'triage', state: 'ACTIVE', childLimit: 1000, children: 0, cascading: false, endedAt: null });
    expect((await create({ scopeId, name: 'triage' })).statusCode).toBe(200);
    expect((await create({ scopeId, name: 'other' })).body.error.code).toBe('CONFLICT');
    const fresh = await create({});
    expect(fresh.statusCode).toBe(201);
    expect(fresh.body.scopeId).toMatch(/^[0-9a-f-]{36}$/);
    const events = await allEvents(server, (all) => all.some((e) => e.type === 'run.created' && e.aggregate.id === scopeId));
    expect(events.find((e) => e.type === 'run.created' && e.aggregate.id === scopeId)).toMatchObject({ aggregate: { type: 'run', id: scopeId }, data: { name: 'triage' } });
  });

  it("holds children to the parent's childLimit and to an ACTIVE parent; an unknown parent is 404", async () => {
    const parent = (await create({ childLimit: 2 })).body.scopeId as string;
    expect((await create({ parentScopeId: parent })).statusCode).toBe(201);
    expect((await create({ parentScopeId: parent })).statusCode).toBe(201);
    expect((await create({ parentScopeId: parent })).body.error).toMatchObject({ code: 'CONFLICT', message: expect.stringMatching(/childLimit of 2/) });
    expect((await create({ parentScopeId: randomUUID() })).statusCode).toBe(404);
    const done = (await create({})).body.scopeId as string;
    expect((await end(done, 'complete')).body).toMatchObject({ state: 'COMPLETED' });
    expect((await create({ parentScopeId: done })).body.error.code).toBe('CONFLICT');
    const detail = await view(parent, '?limit=1');
    expect(detail).toMatchObject({ children: 2, childRuns: { items: [{ parentScopeId: parent }] } });
    expect((await view(parent, `?limit=1&cursor=${detail.childRuns.nextCursor}`)).childRuns).toMatchObject({ items: [{ parentScopeId: parent }], nextCursor: null });
  });

  it('completes and cancels idempotently; the other end is CONFLICT', async () => {
    const a = (await create({})).body.scopeId as string;
    expect((await end(a, 'complete')).body.endedAt).not.toBeNull();
    expect((await end(a, 'complete')).statusCode).toBe(200);
    expect((await end(a, 'cancel')).body.error).toMatchObject({ code: 'CONFLICT', message: expect.stringMatching(/COMPLETED/) });
    const b = (await create({})).body.scopeId as string;
    expect((await end(b, 'cancel')).body).toMatchObject({ state: 'CANCELLED', cascading: false });
    expect((await end(b, 'cancel')).statusCode).toBe(200);
    expect((await end(b, 'complete')).body.error.code).toBe('CONFLICT');
    expect((await end(randomUUID(), 'cancel')).statusCode).toBe(404);
  });

  it('cancel cascades to armed timers, held claims, live tasks (RUN_CANCELLED) and child runs, whose own cascade the sweep finishes; ended tasks stay', async () => {
    const parent = (await create({})).body.scopeId as string;
    const child = (await create({ parentScopeId: parent })).body.scopeId as string;
    const [pending, running, finished] = [await submit(parent), await submit(parent), await submit(parent)];
    const admitted = await server.api('POST', '/tasks/admit', { body: { mailboxId: box, scopeId: parent, holder: 'w', holderSession: 's' }, idem: idem() });
    expect(admitted.statusCode).toBe(200);
    const done = await server.api('POST', '/tasks/admit', { body: { mailboxId: box, scopeId: parent, holder: 'w', holderSession: 's' }, idem: idem() });
    await server.api('POST', `/messages/${done.body.messageId}/complete`, { body: { token: done.body.token } });
    const childTask = await submit(child);
    const timer = await server.api('POST', '/timers', { body: { timerKey: randomUUID(), scopeId: parent, delaySeconds: 60, mailboxId: box, payload: 'wake' }, idem: idem() });
    expect(timer.statusCode).toBe(201);
    const claim = await server.api('POST', '/claims', { body: { claimKey: `file-${randomUUID()}`, scopeId: parent, holder: 'agent', holderSession: 's1' }, idem: idem() });
    expect(claim.statusCode).toBe(201);

    const cancelled = await end(parent, 'cancel');
    expect(cancelled.body).toMatchObject({ state: 'CANCELLED', cascading: false });
    const states = await Promise.all([pending, running, finished].map(task));
    expect(states.map((t) => t.state).sort()).toEqual(['CANCELLED', 'CANCELLED', 'SUCCEEDED']);
    expect(states.filter((t) => t.state === 'CANCELLED').every((t) => t.failureReason === 'RUN_CANCELLED')).toBe(true);
    expect((await server.api('GET', `/timers/${timer.body.id}`)).body).toMatchObject({ state: 'CANCELLED' });
    expect((await server.api('GET', `/claims/${claim.body.id}`)).body).toMatchObject({ state: 'RELEASED' });
    expect((await server.api('POST', `/claims/${claim.body.id}/renew`, { body: { token: claim.body.token } })).body.error.code).toBe('LEASE_LOST');
    expect(await view(child)).toMatchObject({ state: 'CANCELLED', cascading: true });
    expect((await task(childTask)).state).toBe('PENDING');
    await server.baton.deps.runDueWork();
    expect(await view(child)).toMatchObject({ state: 'CANCELLED', cascading: false });
    expect(await task(childTask)).toMatchObject({ state: 'CANCELLED', failureReason: 'RUN_CANCELLED' });
    expect((await view(parent)).counts).toMatchObject({
      tasks: { byState: { CANCELLED: 2, SUCCEEDED: 1, PENDING: 0, RUNNING: 0 } },
      claims: { total: 1, byState: { HELD: 0, RELEASED: 1 } },
      timers: { total: 1, byState: { ARMED: 0, CANCELLED: 1 } },
    });
  });

  it('cancel ends a claim whose lease ran out before the sweep came as EXPIRED, not RELEASED, and answers 200', async () => {
    // Found by the simulator: the cascade released it, and releasing a claim that is not live is an invariant violation (500).
    const scopeId = (await create({})).body.scopeId as string;
    const live = await server.api('POST', '/claims', { body: { claimKey: `live-${randomUUID()}`, scopeId, holder: 'agent', holderSession: 's1', leaseSeconds: 60 }, idem: idem() });
    const lapsed = await server.api('POST', '/claims', { body: { claimKey: `lapsed-${randomUUID()}`, scopeId, holder: 'agent', holderSession: 's1', leaseSeconds: 5 }, idem: idem() });
    expect([live.statusCode, lapsed.statusCode]).toEqual([201, 201]);
    server.clock.advance(10_000); // past the short lease; no sweep runs in between

    const cancelled = await end(scopeId, 'cancel');
    expect(cancelled.statusCode).toBe(200);
    expect(cancelled.body).toMatchObject({ state: 'CANCELLED', cascading: false });
    expect((await server.api('GET', `/claims/${live.body.id}`)).body).toMatchObject({ state: 'RELEASED' });
    expect((await server.api('GET', `/claims/${lapsed.body.id}`)).body).toMatchObject({ state: 'EXPIRED' });
    const events = await allEvents(server, (all) => all.some((e) => e.type === 'claim.expired' && e.aggregate.id === lapsed.body.id));
    expect(events.filter((e) => e.aggregate.id === lapsed.body.id).map((e) => e.type)).toEqual(['claim.acquired', 'claim.expired']);
    expect(events.find((e) => e.type === 'claim.released' && e.aggregate.id === live.body.id)).toMatchObject({ data: { reason: 'RUN_CANCELLED' } });
  });

  it('cancels a large run in bounded batches: the reply says cascading, the sweep finishes', async () => {
    const scopeId = (await create({})).body.scopeId as string;
    const batch = await server.api('POST', '/tasks/submit-batch', { body: { tasks: Array.from({ length: 80 }, () => ({ scopeId, mailboxId: box, taskKey: randomUUID(), input: null })) }, idem: idem() });
    expect(batch.statusCode).toBe(200);
    expect((await end(scopeId, 'cancel')).body).toMatchObject({ cascading: true });
    expect((await view(scopeId)).counts.tasks.byState).toMatchObject({ CANCELLED: 50, PENDING: 30 });
    await server.baton.deps.runDueWork();
    expect(await view(scopeId)).toMatchObject({ cascading: false, counts: { tasks: { byState: { CANCELLED: 80, PENDING: 0 } } } });
  });

  /** Every request that creates work under a scope (docs/design/0019-runs.md), by name, for `scopeId`. */
  const workUnder = (scopeId: string, refs: { budget: string; allowance: string }): Record<string, () => Promise<Reply>> => {
    const post = (path: string, body: unknown) => server.api('POST', path, { body, idem: idem() });
    return {
      task: () => post('/tasks', { scopeId, mailboxId: box, taskKey: randomUUID(), input: null }),
      send: () => post(`/mailboxes/${box}/messages`, { scopeId, payload: 'hi' }),
      claim: () => post('/claims', { claimKey: `k-${randomUUID()}`, scopeId, holder: 'a', holderSession: 's' }),
      timer: () => post('/timers', { timerKey: randomUUID(), scopeId, delaySeconds: 60, mailboxId: box, payload: null }),
      reserve: () => post(`/budgets/${refs.budget}/reserve`, { scopeId, holder: 'a', amountMinor: '1' }),
      consume: () => post(`/allowances/${refs.allowance}/consume`, { scopeId, units: 1, holder: 'a' }),
      wait: () => post(`/allowances/${refs.allowance}/wait`, { scopeId, units: 1, holder: 'a' }),
      barrier: () => post('/barriers', { scopeId, target: 2 }),
      group: () => post('/task-groups', { parentScopeId: scopeId, mailboxId: box, condition: 'ALL_TERMINAL' }),
    };
  };
  const workRefs = async () => ({
    budget: (await server.api('POST', '/budgets', { body: { name: `b-${randomUUID()}`, currency: 'USD', scale: 2, limitMinor: '1000' }, idem: idem() })).body.id as string,
    allowance: (await server.api('POST', '/allowances', { body: { name: `q-${randomUUID()}`, unitsLimit: 100, windowSeconds: 60 }, idem: idem() })).body.id as string,
  });

  it.each(['complete', 'cancel'] as const)('after %s, a run refuses every kind of new work under its scopeId with 409 naming its state; a scope with no run takes it', async (how) => {
    const refs = await workRefs();
    const scopeId = (await create({})).body.scopeId as string;
    expect((await end(scopeId, how)).statusCode).toBe(200);
    const state = how === 'complete' ? 'COMPLETED' : 'CANCELLED';
    for (const [kind, request] of Object.entries(workUnder(scopeId, refs))) {
      const reply = await request();
      expect([kind, reply.statusCode, reply.body.error]).toEqual([kind, 409, expect.objectContaining({ code: 'CONFLICT', message: `run ${scopeId} is ${state}: it takes no new work` })]);
    }
    expect((await create({ parentScopeId: scopeId })).body.error).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining(state) });
    expect((await view(scopeId)).counts).toMatchObject({ tasks: { total: 0 }, claims: { total: 0 }, timers: { total: 0 } });
    for (const [kind, request] of Object.entries(workUnder(randomUUID(), refs))) expect([kind, (await request()).statusCode]).toEqual([kind, 201]);
  });

  it('a repeat of work done before the end is refused too, but a replay of its Idempotency-Key answers as before', async () => {
    const scopeId = (await create({})).body.scopeId as string;
    const body = { scopeId, mailboxId: box, taskKey: randomUUID(), input: null };
    const key = idem();
    const first = await server.api('POST', '/tasks', { body, idem: key });
    expect(first.statusCode).toBe(201);
    await end(scopeId, 'complete');
    expect(await server.api('POST', '/tasks', { body, idem: key })).toMatchObject({ statusCode: 201, body: first.body });
    expect((await server.api('POST', '/tasks', { body, idem: idem() })).body.error).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('COMPLETED') });
  });

  it('submit-batch and send-batch answer 409 for each item under an ended run and go on with the others', async () => {
    const ended = (await create({})).body.scopeId as string;
    await end(ended, 'cancel');
    const open = randomUUID();
    const tasks = [ended, open, ended].map((scopeId) => ({ scopeId, mailboxId: box, taskKey: randomUUID(), input: null }));
    const submitted = await server.api('POST', '/tasks/submit-batch', { body: { tasks }, idem: idem() });
    expect(submitted.statusCode).toBe(200);
    expect(submitted.body.items.map((i: { status: number }) => i.status)).toEqual([409, 201, 409]);
    expect(submitted.body.items[0].body.error).toMatchObject({ code: 'CONFLICT', message: `run ${ended} is CANCELLED: it takes no new work` });
    const sent = await server.api('POST', `/mailboxes/${box}/messages/send-batch`, { body: { messages: [open, ended].map((scopeId) => ({ scopeId, payload: 1 })) }, idem: idem() });
    expect(sent.body.items.map((i: { status: number }) => i.status)).toEqual([201, 409]);
  });

  it("work under a task group's gate scope belongs to the run the group was created under: refused once it ended, and cancelled by its cancel", async () => {
    const scopeId = (await create({})).body.scopeId as string;
    const group = (await server.api('POST', '/task-groups', { body: { parentScopeId: scopeId, mailboxId: box, condition: 'ALL_TERMINAL' }, idem: idem() })).body;
    const nested = (await server.api('POST', '/task-groups', { body: { parentScopeId: group.scopeId, mailboxId: box, condition: 'ALL_TERMINAL' }, idem: idem() })).body;
    const addMember = (groupId: string, taskKey: string = randomUUID()) => server.api('POST', `/task-groups/${groupId}/tasks`, { body: { taskKey }, idem: idem() });
    const member = await addMember(group.groupId, 'kept-key');
    const nestedMember = await addMember(nested.groupId);
    expect([member.statusCode, nestedMember.statusCode]).toEqual([201, 201]);

    expect((await end(scopeId, 'cancel')).body).toMatchObject({ state: 'CANCELLED', cascading: false });
    for (const id of [member.body.taskId, nestedMember.body.taskId]) expect(await task(id)).toMatchObject({ state: 'CANCELLED', failureReason: 'RUN_CANCELLED' });
    const refused = `scope ${group.scopeId} belongs to run ${scopeId}, which is CANCELLED: it takes no new work`;
    expect((await addMember(group.groupId)).body.error).toMatchObject({ code: 'CONFLICT', message: refused });
    expect((await addMember(group.groupId, 'kept-key')).body.error).toMatchObject({ code: 'CONFLICT', message: refused });
    expect((await addMember(nested.groupId)).body.error.message).toMatch(/belongs to run .* which is CANCELLED/);
    expect((await server.api('POST', '/task-groups', { body: { parentScopeId: nested.scopeId, mailboxId: box, condition: 'ALL_TERMINAL' }, idem: idem() })).statusCode).toBe(409);
    expect((await server.api('POST', '/tasks', { body: { scopeId: group.scopeId, mailboxId: box, taskKey: randomUUID() }, idem: idem() })).statusCode).toBe(409);
  });

  it('a child run governs its own scope: it takes work while ACTIVE under a COMPLETED parent', async () => {
    const parent = (await create({})).body.scopeId as string;
    const child = (await create({ parentScopeId: parent })).body.scopeId as string;
    await end(parent, 'complete');
    expect((await server.api('POST', '/tasks', { body: { scopeId: child, mailboxId: box, taskKey: randomUUID() }, idem: idem() })).statusCode).toBe(201);
    expect((await server.api('POST', '/tasks', { body: { scopeId: parent, mailboxId: box, taskKey: randomUUID() }, idem: idem() })).statusCode).toBe(409);
  });

  it("refuses runs past the plan's active runs with PLAN_LIMIT_REACHED, and counts them in GET /usage", async () => {
    const org = await server.admin('POST', '/orgs', { name: `runs-${randomUUID()}`, plan: 'ENTERPRISE', limits: { activeRuns: 2 } });
    const space = await server.admin('POST', `/orgs/${org.body.id}/spaces`, { name: 'main' });
    const key = (await server.admin('POST', `/orgs/${org.body.id}/keys`, { name: 'k' })).body.secret as string;
    const call = (method: 'GET' | 'POST', path: string, body?: unknown) =>
      server.inject(method, `/v1/spaces/${space.body.id}${path}`, { authorization: `Bearer ${key}`, 'idempotency-key': idem() }, body);
    const first = (await call('POST', '/runs', {})).body.scopeId as string;
    expect((await call('POST', '/runs', {})).statusCode).toBe(201);
    const refused = await call('POST', '/runs', {});
    expect(refused.statusCode).toBe(429);
    expect(refused.body.error).toMatchObject({ code: 'PLAN_LIMIT_REACHED', message: expect.stringMatching(/active runs/) });
    expect((await call('GET', '/usage')).body).toMatchObject({ activeRuns: 2 });
    await call('POST', `/runs/${first}/complete`);
    await server.baton.deps.runDueWork();
    expect((await call('POST', '/runs', {})).statusCode).toBe(201);
  });
});

/**
 * docs/design/0023-service-clock.md: on a manual clock (BATON_CLOCK=manual) the background loops still run, on real
 * time, so what follows from a request without depending on time happens while the clock stands
 * still. The loops are started as `npm start` starts them; nothing here advances the clock.
 */
describe.each(storeTargets())('runs on a manual clock that does not move, on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;
  let box: string;

  beforeAll(async () => {
    ({ server, close } = await openTestServer(target));
    server.baton.background.start();
    server.baton.limitsSync.start();
    box = (await server.api('POST', '/mailboxes', { body: { name: 'still-clock' }, idem: idem() })).body.id;
  });
  afterAll(async () => close());

  const create = (body: Record<string, unknown>) => server.api('POST', '/runs', { body, idem: idem() });

  it("cancelling a run cancels its child runs' tasks", async () => {
    const startedMs = server.clock.now();
    const parent = (await create({})).body.scopeId as string;
    const child = (await create({ parentScopeId: parent })).body.scopeId as string;
    const grandchild = (await create({ parentScopeId: child })).body.scopeId as string;
    const submit = async (scopeId: string) => (await server.api('POST', '/tasks', { body: { scopeId, mailboxId: box, taskKey: randomUUID(), input: null }, idem: idem() })).body.taskId as string;
    const tasks = [await submit(child), await submit(grandchild)];

    expect((await server.api('POST', `/runs/${parent}/cancel`, { idem: idem() })).body).toMatchObject({ state: 'CANCELLED' });
    const states = async () => Promise.all(tasks.map(async (id) => (await server.api('GET', `/tasks/${id}`)).body.state));
    await expect.poll(states, { timeout: 5_000, interval: 20 }).toEqual(['CANCELLED', 'CANCELLED']);
    expect((await server.api('GET', `/runs/${grandchild}`)).body).toMatchObject({ state: 'CANCELLED', cascading: false });
    expect(server.clock.now()).toBe(startedMs);
  });

  it("completing runs makes room under the plan's active runs", async () => {
    const startedMs = server.clock.now();
    const org = await server.admin('POST', '/orgs', { name: `still-${randomUUID()}`, plan: 'ENTERPRISE', limits: { activeRuns: 2 } });
    const space = await server.admin('POST', `/orgs/${org.body.id}/spaces`, { name: 'main' });
    const key = (await server.admin('POST', `/orgs/${org.body.id}/keys`, { name: 'k' })).body.secret as string;
    const call = (path: string) => server.inject('POST', `/v1/spaces/${space.body.id}${path}`, { authorization: `Bearer ${key}`, 'idempotency-key': idem() }, {});
    const runs = [(await call('/runs')).body.scopeId, (await call('/runs')).body.scopeId] as string[];
    expect((await call('/runs')).statusCode).toBe(429);

    for (const scopeId of runs) expect((await call(`/runs/${scopeId}/complete`)).statusCode).toBe(200);
    // Within the limits sync's real-time interval (250 ms), not a fixed wait.
    await expect.poll(async () => (await call('/runs')).statusCode, { timeout: 5_000, interval: 50 }).toBe(201);
    expect(server.clock.now()).toBe(startedMs);
  });
});
