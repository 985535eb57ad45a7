import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { idem, openTestServer, type CallOptions, type Reply, type TestServer } from '../support/server';

/**
 * The plan's agents at once counted lease by lease (docs/design/0015-batches.md, docs/design/0016-limits-and-retry-after.md): every claimed delivery, pool
 * unit and claim a call hands out, a batch's item by item, never passes the limit; a call that may
 * hand out none is CONCURRENCY_LIMITED. Operations and request rate count a batch's items.
 */
const scopeId = '11111111-1111-4111-8111-111111111111';
const holder = { holder: 'worker', holderSession: 's1' };

interface Tenant {
  orgId: string;
  call(method: 'GET' | 'POST', path: string, options?: CallOptions): Promise<Reply>;
}

interface Delivery {
  messageId: string;
  token: string;
}

describe.each(storeTargets())('agents at once, lease by lease, on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ server, close } = await openTestServer(target));
  });
  afterAll(async () => close());

  const { tenant, created, sendMany, submit, recvBatch, admitBatch, liveLeases } = helpersOn(() => server);

  it('a recv-batch or admit-batch hands out only the leases left, item by item, then the next claim is CONCURRENCY_LIMITED', async () => {
    const t = await tenant(10);
    const box = await created(t, '/mailboxes', { name: 'plain' });
    await sendMany(t, box, 30);
    const first = await recvBatch(t, box, 4);
    expect(first.body.items).toHaveLength(4);
    const second = await recvBatch(t, box, 50);
    expect(second.body.items).toHaveLength(6);
    const refused = await t.call('POST', `/mailboxes/${box}/recv`, { body: { scopeId, ...holder } });
    expect(refused.statusCode).toBe(429);
    expect(refused.body.error.code).toBe('CONCURRENCY_LIMITED');
    expect(refused.headers['retry-after']).toBe('1');
    expect(await liveLeases(t)).toBe(10);

    const tasks = await tenant(10);
    const taskBox = await created(tasks, '/mailboxes', { name: 'tasks' });
    for (let i = 0; i < 15; i++) await submit(tasks, taskBox);
    const admitted = await admitBatch(tasks, taskBox, 50);
    expect(admitted.body.items).toHaveLength(10);
    expect((await admitBatch(tasks, taskBox, 1)).body.error.code).toBe('CONCURRENCY_LIMITED');
    expect(await liveLeases(tasks)).toBe(10);
  });

  it('a lease that ends makes room once the count is read again (at most a second later in service)', async () => {
    const t = await tenant(3);
    const box = await created(t, '/mailboxes', { name: 'plain' });
    await sendMany(t, box, 5);
    const held = (await recvBatch(t, box, 10)).body.items as Delivery[];
    expect(held).toHaveLength(3);
    const done = await t.call('POST', '/messages/complete-batch', { body: { items: held.slice(0, 2).map((d) => ({ messageId: d.messageId, token: d.token })) } });
    expect(done.body.items.map((i: { status: number }) => i.status)).toEqual([200, 200]);
    await server.baton.deps.runDueWork();
    expect((await recvBatch(t, box, 10)).body.items).toHaveLength(2);
  });

  it('two batches at once cannot both take the last leases', async () => {
    const t = await tenant(7);
    const box = await created(t, '/mailboxes', { name: 'plain' });
    await sendMany(t, box, 30);
    const replies = await Promise.all([recvBatch(t, box, 5), recvBatch(t, box, 5), recvBatch(t, box, 5)]);
    const handedOut = replies.reduce((sum, r) => sum + (r.statusCode === 200 ? r.body.items.length : 0), 0);
    expect(handedOut).toBe(7);
    expect(replies.filter((r) => r.statusCode === 429).every((r) => r.body.error.code === 'CONCURRENCY_LIMITED')).toBe(true);
    expect(await liveLeases(t)).toBe(7);
  });

  it('each pool unit admitted with a delivery is a lease: a candidate whose units would pass the limit is passed over, and an admit that can admit nothing else is CONCURRENCY_LIMITED', async () => {
    const t = await tenant(6);
    const box = await created(t, '/mailboxes', { name: 'tasks' });
    await created(t, '/pools', { name: 'gpu', capacity: 100 });
    const big = await submit(t, box, { name: 'gpu', units: 4 }); // 5 leases
    const alsoBig = await submit(t, box, { name: 'gpu', units: 3 }); // 4
    const plain = await submit(t, box); // 1
    const admitted = await admitBatch(t, box, 10);
    expect(admitted.statusCode).toBe(200);
    expect(admitted.body.items.map((d: { taskId: string }) => d.taskId)).toEqual([big, plain]);
    expect(await liveLeases(t)).toBe(6);
    expect((await t.call('GET', `/tasks/${alsoBig}`)).body.state).toBe('PENDING');
    // Room for one delivery, none for its pool units: refused, and the task still waits.
    const done = admitted.body.items[1] as Delivery;
    await t.call('POST', `/messages/${done.messageId}/complete`, { body: { token: done.token } });
    await server.baton.deps.runDueWork();
    const refused = await t.call('POST', '/tasks/admit', { body: { scopeId, mailboxId: box, ...holder }, idem: idem() });
    expect(refused.statusCode).toBe(429);
    expect(refused.body.error.code).toBe('CONCURRENCY_LIMITED');
    expect((await t.call('GET', `/tasks/${alsoBig}`)).body.state).toBe('PENDING');
    expect(await liveLeases(t)).toBe(5);
  });

  it('operations and request counts follow the items: a recv-batch counts its deliveries, a batch\'s malformed item counts nothing', async () => {
    const t = await tenant(1_000);
    const box = await created(t, '/mailboxes', { name: 'plain' }); // 1 operation
    const sent = await t.call('POST', `/mailboxes/${box}/messages/send-batch`, { body: { messages: [{ scopeId, payload: 1 }, { payload: 'no scope' }, { scopeId, payload: 3 }] }, idem: idem() });
    expect(sent.body.items.map((i: { status: number }) => i.status)).toEqual([201, 400, 201]); // 2 operations, 3 requests
    const before = (await t.call('GET', '/usage')).body;
    expect(before.operations).toBe(3);
    const claimed = await recvBatch(t, box, 10); // 2 operations, 2 requests
    expect(claimed.body.items).toHaveLength(2);
    const after = (await t.call('GET', '/usage')).body;
    expect(after.operations).toBe(5);
    expect(after.requestsThisMinute - before.requestsThisMinute).toBe(3); // the recv-batch's 2, and the GET
  });

});

/**
 * The property makes thousands of calls, so it runs on the memory store alone. It runs one
 * transaction at a time, but calls sent together still meet before it: their lease holds overlap.
 */
describe('agents at once over random mixes of calls, on the memory store', () => {
  let server: TestServer;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ server, close } = await openTestServer(storeTargets().find((t) => t.name === 'memory')!));
  });
  afterAll(async () => close());

  const { tenant, created, sendMany, submit, recvBatch, admitBatch, liveLeases } = helpersOn(() => server);

  it('never holds more live leases than agentsAtOnce, over random mixes of single and batch claims, completes, releases and syncs, some at once', async () => {
    type Call =
      | { kind: 'recv' | 'admit' | 'claim' }
      | { kind: 'recv-batch' | 'admit-batch'; max: number }
      | { kind: 'complete' | 'complete-batch' | 'release'; pick: number }
      | { kind: 'sync' };
    const call: fc.Arbitrary<Call> = fc.oneof(
      fc.record({ kind: fc.constantFrom('recv' as const, 'admit' as const, 'claim' as const) }),
      fc.record({ kind: fc.constantFrom('recv-batch' as const, 'admit-batch' as const), max: fc.integer({ min: 1, max: 30 }) }),
      fc.record({ kind: fc.constantFrom('complete' as const, 'complete-batch' as const, 'release' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('sync' as const) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 8 }), fc.array(fc.array(call, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 15 }), async (cap, steps) => {
        const t = await tenant(cap);
        const box = await created(t, '/mailboxes', { name: 'work' });
        await created(t, '/pools', { name: 'gpu', capacity: 1_000 });
        await sendMany(t, box, 20);
        for (let i = 0; i < 20; i++) await submit(t, box, i % 3 === 0 ? { name: 'gpu', units: 1 + (i % 2) } : undefined);
        const held: Delivery[] = [];
        const claims: { id: string; token: string }[] = [];
        let claimKeys = 0;
        const take = <T>(from: T[], pick: number): T | undefined => (from.length === 0 ? undefined : from.splice(pick % from.length, 1)[0]);
        const run = async (c: Call): Promise<void> => {
          const body = { scopeId, ...holder };
          if (c.kind === 'recv' || c.kind === 'admit') {
            const res = c.kind === 'recv' ? await t.call('POST', `/mailboxes/${box}/recv`, { body }) : await t.call('POST', '/tasks/admit', { body: { ...body, mailboxId: box }, idem: idem() });
            if (res.statusCode === 200) held.push(res.body);
          } else if (c.kind === 'recv-batch' || c.kind === 'admit-batch') {
            const res = c.kind === 'recv-batch' ? await recvBatch(t, box, c.max) : await admitBatch(t, box, c.max);
            if (res.statusCode === 200) held.push(...res.body.items);
          } else if (c.kind === 'claim') {
            const res = await t.call('POST', '/claims', { body: { ...body, claimKey: `k${++claimKeys}` }, idem: idem() });
            if (res.statusCode === 201) claims.push(res.body);
          } else if (c.kind === 'complete') {
            const d = take(held, c.pick);
            if (d) await t.call('POST', `/messages/${d.messageId}/complete`, { body: { token: d.token } });
          } else if (c.kind === 'complete-batch') {
            const items = [take(held, c.pick), take(held, c.pick)].filter((d): d is Delivery => d !== undefined);
            if (items.length > 0) await t.call('POST', '/messages/complete-batch', { body: { items: items.map((d) => ({ messageId: d.messageId, token: d.token })) } });
          } else if (c.kind === 'release') {
            const claim = take(claims, c.pick);
            if (claim) await t.call('POST', `/claims/${claim.id}/release`, { body: { token: claim.token } });
          } else {
            await server.baton.deps.runDueWork();
          }
        };
        for (const together of steps) {
          const replies = await Promise.allSettled(together.map(run));
          expect(replies.filter((r) => r.status === 'rejected')).toEqual([]);
          expect(await liveLeases(t)).toBeLessThanOrEqual(cap);
        }
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});

/** Tenants and calls on the server `at()` answers (opened in a beforeAll). */
function helpersOn(at: () => TestServer) {
  let tenants = 0;
  /** An ENTERPRISE organization of its own whose only cap that binds is `agentsAtOnce`. */
  const tenant = async (agentsAtOnce: number): Promise<Tenant> => {
    const limits = { agentsAtOnce, requestsPerMinute: null, activeTasks: null, operationsPerMonth: null };
    const org = await at().admin('POST', '/orgs', { name: `leases${++tenants}`, plan: 'ENTERPRISE', limits });
    expect(org.statusCode).toBe(201);
    const space = await at().admin('POST', `/orgs/${org.body.id}/spaces`, { name: 'main' });
    const key = (await at().admin('POST', `/orgs/${org.body.id}/keys`, { name: 'k' })).body.secret as string;
    const call = (method: 'GET' | 'POST', path: string, options: CallOptions = {}) => {
      const headers: Record<string, string> = { authorization: `Bearer ${key}` };
      if (options.idem !== undefined) headers['idempotency-key'] = options.idem;
      return at().inject(method, `/v1/spaces/${space.body.id}${path}`, headers, options.body);
    };
    return { orgId: org.body.id, call };
  };
  const created = async (t: Tenant, path: string, body: unknown): Promise<string> => {
    const res = await t.call('POST', path, { body, idem: idem() });
    expect(res.statusCode, JSON.stringify(res.body)).toBe(201);
    return res.body.id ?? res.body.taskId;
  };
  const sendMany = async (t: Tenant, box: string, count: number) => {
    const res = await t.call('POST', `/mailboxes/${box}/messages/send-batch`, { body: { messages: Array.from({ length: count }, (_, i) => ({ scopeId, payload: i })) }, idem: idem() });
    expect(res.statusCode).toBe(200);
  };
  const submit = (t: Tenant, box: string, pool?: { name: string; units: number }) =>
    created(t, '/tasks', { scopeId, mailboxId: box, taskKey: idem(), ...(pool ? { requirements: { pools: [pool] } } : {}) });
  const recvBatch = (t: Tenant, box: string, maxMessages: number) => t.call('POST', `/mailboxes/${box}/recv-batch`, { body: { scopeId, ...holder, maxMessages } });
  const admitBatch = (t: Tenant, box: string, maxTasks: number) => t.call('POST', '/tasks/admit-batch', { body: { scopeId, mailboxId: box, ...holder, maxTasks }, idem: idem() });
  /** The live leases as the store counts them now (what the limit is about), not as a server's cache has them. */
  const liveLeases = async (t: Tenant): Promise<number> => {
    const loads = await at().baton.deps.store.read((tx) => tx.usage.loadOf([t.orgId], at().clock.now()));
    return loads.get(t.orgId)?.liveLeases ?? 0;
  };
  return { tenant, created, sendMany, submit, recvBatch, admitBatch, liveLeases };
}
