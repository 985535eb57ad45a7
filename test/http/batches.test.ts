import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { idem, startTestServer, type Reply, type TestServer } from '../support/server';

/**
 * The batch routes (docs/design/0015-batches.md, docs/api.md "Batches"): each item answered exactly as its
 * single route would, in order, all or nothing by itself; one Idempotency-Key for the batch.
 * Every test uses mailboxes of its own.
 */
const scopeId = '11111111-1111-4111-8111-111111111111';
const unknownId = '22222222-2222-4222-8222-222222222222';

interface Delivery {
  messageId: string;
  taskId: string;
  token: string;
}

describe.each(storeTargets())('batch routes over HTTP on $name', (target) => {
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

  let counter = 0;
  const tag = () => `${++counter}`;
  const expectStatus = (res: Reply, status: number) => expect(res.statusCode, JSON.stringify(res.body)).toBe(status);
  const newBox = async (): Promise<string> => (await server.api('POST', '/mailboxes', { body: { name: `batch-box-${tag()}` }, idem: idem() })).body.id;
  const submit = async (box: string, extra: Record<string, unknown> = {}): Promise<string> => {
    const res = await server.api('POST', '/tasks', { body: { scopeId, mailboxId: box, taskKey: `batch-task-${tag()}`, input: { n: counter }, ...extra }, idem: idem() });
    expectStatus(res, 201);
    return res.body.taskId;
  };
  const admitBatch = (box: string, maxTasks: number, extra: Record<string, unknown> = {}) =>
    server.api('POST', '/tasks/admit-batch', { body: { scopeId, mailboxId: box, holder: 'w', holderSession: 's', maxTasks, ...extra }, idem: idem() });
  const task = async (id: string) => (await server.api('GET', `/tasks/${id}`)).body;
  const admitted = async (box: string, n: number): Promise<Delivery[]> => {
    const res = await admitBatch(box, n);
    expectStatus(res, 200);
    expect(res.body.items).toHaveLength(n);
    return res.body.items;
  };

  it('admit-batch admits up to maxTasks in FIFO order, each with its own token, then 204', async () => {
    const box = await newBox();
    const ids = [await submit(box), await submit(box), await submit(box), await submit(box), await submit(box)];
    const first = await admitBatch(box, 3);
    expectStatus(first, 200);
    expect(first.body.items.map((d: Delivery) => d.taskId)).toEqual(ids.slice(0, 3));
    expect(new Set(first.body.items.map((d: Delivery) => d.token)).size).toBe(3);
    for (const id of ids.slice(0, 3)) expect((await task(id)).state).toBe('RUNNING');
    const rest = await admitBatch(box, 10);
    expect(rest.body.items.map((d: Delivery) => d.taskId)).toEqual(ids.slice(3));
    expectStatus(await admitBatch(box, 10), 204);
  });

  it('admit-batch passes over a delivery whose resources are short, as admit does, and admits the next', async () => {
    const box = await newBox();
    const pool = `batch-pool-${tag()}`;
    expectStatus(await server.api('POST', '/pools', { body: { name: pool, capacity: 1 }, idem: idem() }), 201);
    const needs = { requirements: { pools: [{ name: pool, units: 1 }] } };
    const a = await submit(box, needs);
    const b = await submit(box);
    const c = await submit(box, needs);
    const d = await submit(box);
    const res = await admitBatch(box, 4);
    expectStatus(res, 200);
    expect(res.body.items.map((x: Delivery) => x.taskId)).toEqual([a, b, d]);
    expect(res.body.items[0].claimed.pools).toEqual([{ name: pool, units: 1 }]);
    expect((await task(c)).state).toBe('PENDING');
  });

  it('admit-batch long-polls and answers as soon as a delivery is admissible', async () => {
    const box = await newBox();
    const polling = admitBatch(box, 5, { waitMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const id = await submit(box);
    const res = await polling;
    expectStatus(res, 200);
    expect(res.body.items.map((x: Delivery) => x.taskId)).toEqual([id]);
  });

  it('complete-batch answers each item as complete would: one LEASE_LOST or unknown message fails only itself', async () => {
    const box = await newBox();
    await submit(box);
    await submit(box);
    await submit(box);
    const [d1, d2, d3] = await admitted(box, 3);
    const res = await server.api('POST', '/messages/complete-batch', {
      body: {
        items: [
          { messageId: d1!.messageId, token: d1!.token, result: { payload: { v: 1 } } },
          { messageId: d2!.messageId, token: 'not-the-token' },
          { messageId: unknownId, token: 'x' },
          { messageId: d3!.messageId, token: d3!.token },
          { messageId: d1!.messageId, token: d1!.token },
        ],
      },
    });
    expectStatus(res, 200);
    expect(res.body.items.map((i: { status: number }) => i.status)).toEqual([200, 409, 404, 200, 409]);
    expect(res.body.items[0]).toEqual({ messageId: d1!.messageId, status: 200, body: { state: 'ACKED', resultMessageId: null } });
    expect(res.body.items[1].body.error).toMatchObject({ code: 'LEASE_LOST', requestId: expect.any(String) });
    expect(res.body.items[2].body.error.code).toBe('NOT_FOUND');
    expect(res.body.items[4].body.error.code).toBe('LEASE_LOST');
    expect(await task(d1!.taskId)).toMatchObject({ state: 'SUCCEEDED', outcome: { v: 1 } });
    expect((await task(d2!.taskId)).state).toBe('RUNNING');
    expect((await task(d3!.taskId)).state).toBe('SUCCEEDED');
    // The item that failed left its delivery as it was: its own token still completes it.
    expectStatus(await server.api('POST', `/messages/${d2!.messageId}/complete`, { body: { token: d2!.token } }), 200);
  });

  it('complete-batch: an item whose result cannot be published is rolled back alone', async () => {
    const box = await newBox();
    await submit(box);
    await submit(box);
    const [d1, d2] = await admitted(box, 2);
    const res = await server.api('POST', '/messages/complete-batch', {
      body: {
        items: [
          { messageId: d1!.messageId, token: d1!.token, result: { mailboxId: unknownId, scopeId, payload: 1 } },
          { messageId: d2!.messageId, token: d2!.token },
        ],
      },
    });
    expect(res.body.items.map((i: { status: number }) => i.status)).toEqual([404, 200]);
    expect((await task(d1!.taskId)).state).toBe('RUNNING');
    expect((await task(d2!.taskId)).state).toBe('SUCCEEDED');
    const messages = (await server.api('GET', `/mailboxes/${box}/messages?state=CLAIMED`)).body.items;
    expect(messages.map((m: { id: string }) => m.id)).toEqual([d1!.messageId]);
  });

  it('one Idempotency-Key covers the batch: a replay answers the whole reply and applies nothing again', async () => {
    const box = await newBox();
    await submit(box);
    const [d] = await admitted(box, 1);
    const key = idem();
    const body = { items: [{ messageId: d!.messageId, token: d!.token }] };
    const first = await server.api('POST', '/messages/complete-batch', { body, idem: key });
    const again = await server.api('POST', '/messages/complete-batch', { body, idem: key });
    expect(again.body).toEqual(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(first.body.items[0].status).toBe(200);
  });

  it('nack-batch and renew-batch answer per item as nack and renew do', async () => {
    const box = await newBox();
    await submit(box);
    await submit(box);
    const [d1, d2] = await admitted(box, 2);
    const renewed = await server.api('POST', '/messages/renew-batch', {
      body: { items: [{ messageId: d1!.messageId, token: d1!.token, leaseSeconds: 120 }, { messageId: d2!.messageId, token: 'wrong' }] },
    });
    expect(renewed.body.items.map((i: { status: number }) => i.status)).toEqual([200, 409]);
    expect(Date.parse(renewed.body.items[0].body.leaseExpiresAt)).toBe(server.clock.now() + 120_000);
    const nacked = await server.api('POST', '/messages/nack-batch', {
      body: { items: [{ messageId: d1!.messageId, token: d1!.token, retry: true }, { messageId: d2!.messageId, token: d2!.token, retry: false }] },
    });
    expect(nacked.body.items.map((i: { body: unknown }) => i.body)).toEqual([{ state: 'READY' }, { state: 'DEAD' }]);
    expect((await task(d1!.taskId)).state).toBe('PENDING');
    expect((await task(d2!.taskId)).state).toBe('FAILED');
  });

  it('nack-batch: a member whose failure decides its group cancels the next item\'s delivery, which answers LEASE_LOST as a nack after it would', async () => {
    const box = await newBox();
    const group = await server.api('POST', '/task-groups', { body: { mailboxId: box, condition: 'N_ACCEPTED', threshold: 2 }, idem: idem() });
    expectStatus(group, 201);
    const { groupId, scopeId: gate } = group.body;
    for (const n of [1, 2]) expectStatus(await server.api('POST', `/task-groups/${groupId}/tasks`, { body: { taskKey: `member-${tag()}-${n}` }, idem: idem() }), 201);
    expectStatus(await server.api('POST', `/task-groups/${groupId}/seal`, { body: {} }), 200);
    const res = await server.api('POST', '/tasks/admit-batch', { body: { scopeId: gate, mailboxId: box, holder: 'w', holderSession: 's', maxTasks: 2 }, idem: idem() });
    expectStatus(res, 200);
    const [a, b] = res.body.items as Delivery[];
    const nacked = await server.api('POST', '/messages/nack-batch', {
      body: { items: [{ messageId: a!.messageId, token: a!.token, retry: false }, { messageId: b!.messageId, token: b!.token, retry: false }] },
    });
    expect(nacked.body.items.map((i: { status: number }) => i.status)).toEqual([200, 409]);
    expect(nacked.body.items[1].body.error.code).toBe('LEASE_LOST');
    expect((await server.api('GET', `/task-groups/${groupId}`)).body).toMatchObject({ state: 'DECIDED', outcome: 'FAILED' });
    expect((await task(b!.taskId)).state).toBe('CANCELLED');
  });

  it('recv-batch claims up to maxMessages in FIFO order, each with its own token', async () => {
    const box = await newBox();
    const sent: string[] = [];
    for (let i = 0; i < 4; i++) sent.push((await server.api('POST', `/mailboxes/${box}/messages`, { body: { scopeId, payload: { i } }, idem: idem() })).body.id);
    const res = await server.api('POST', `/mailboxes/${box}/recv-batch`, { body: { scopeId, holder: 'w', holderSession: 's', maxMessages: 3 } });
    expectStatus(res, 200);
    expect(res.body.items.map((d: { messageId: string }) => d.messageId)).toEqual(sent.slice(0, 3));
    expect(res.body.items.map((d: { payload: unknown }) => d.payload)).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }]);
    const done = await server.api('POST', '/messages/complete-batch', { body: { items: res.body.items.map((d: Delivery) => ({ messageId: d.messageId, token: d.token })) } });
    expect(done.body.items.map((i: { status: number }) => i.status)).toEqual([200, 200, 200]);
    const last = await server.api('POST', `/mailboxes/${box}/recv-batch`, { body: { scopeId, holder: 'w', holderSession: 's', maxMessages: 3 } });
    expect(last.body.items.map((d: { messageId: string }) => d.messageId)).toEqual([sent[3]]);
    expectStatus(await server.api('POST', `/mailboxes/${box}/recv-batch`, { body: { scopeId, holder: 'w', holderSession: 's', maxMessages: 3 } }), 204);
  });

  it('submit-batch creates or joins each task in order: a key an earlier item created is joined, another fingerprint conflicts alone', async () => {
    const box = await newBox();
    const key = `batch-key-${tag()}`;
    const item = (taskKey: string, input: unknown) => ({ scopeId, mailboxId: box, taskKey, input });
    const res = await server.api('POST', '/tasks/submit-batch', {
      body: { tasks: [item(key, { a: 1 }), item(`batch-key-${tag()}`, { b: 2 }), item(key, { a: 1 }), item(key, { a: 2 }), { ...item(`batch-key-${tag()}`, 1), mailboxId: unknownId }] },
      idem: idem(),
    });
    expectStatus(res, 200);
    expect(res.body.items.map((i: { status: number }) => i.status)).toEqual([201, 201, 200, 409, 404]);
    const [first, second, joined, conflict, missing] = res.body.items;
    expect(first.body).toMatchObject({ state: 'PENDING', created: true });
    expect(joined.body).toEqual({ taskId: first.body.taskId, state: 'PENDING', created: false });
    expect(conflict.body.error).toMatchObject({ code: 'TASK_KEY_CONFLICT', requestId: expect.any(String) });
    expect(missing.body.error.code).toBe('NOT_FOUND');
    // Two deliveries, FIFO as submitted: admit-batch takes them in that order.
    const admittedNow = await admitBatch(box, 10);
    expect(admittedNow.body.items.map((d: Delivery) => d.taskId)).toEqual([first.body.taskId, second.body.taskId]);
  });

  it('submit-batch needs an Idempotency-Key, and a replay answers the whole reply', async () => {
    const box = await newBox();
    const body = { tasks: [{ scopeId, mailboxId: box, taskKey: `batch-key-${tag()}` }] };
    expectStatus(await server.api('POST', '/tasks/submit-batch', { body }), 400);
    const key = idem();
    const first = await server.api('POST', '/tasks/submit-batch', { body, idem: key });
    const again = await server.api('POST', '/tasks/submit-batch', { body, idem: key });
    expect(again.body).toEqual(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });

  it('send-batch sends each message in order; a workKey repeats answer 200, a backlog over its limit refuses the rest alone', async () => {
    const box = (await server.api('POST', '/mailboxes', { body: { name: `batch-small-${tag()}`, backlogLimit: 2 }, idem: idem() })).body.id;
    const res = await server.api('POST', `/mailboxes/${box}/messages/send-batch`, {
      body: { messages: [{ scopeId, payload: 1, workKey: 'w' }, { scopeId, payload: 1, workKey: 'w' }, { scopeId, payload: 2 }, { scopeId, payload: 3 }] },
      idem: idem(),
    });
    expectStatus(res, 200);
    expect(res.body.items.map((i: { status: number }) => i.status)).toEqual([201, 200, 201, 429]);
    expect(res.body.items[1].body.id).toBe(res.body.items[0].body.id);
    expect(res.body.items[3].body.error.code).toBe('BACKLOG_FULL');
    const ready = (await server.api('GET', `/mailboxes/${box}/messages?state=READY`)).body.items;
    expect(ready.map((m: { payload: unknown }) => m.payload)).toEqual([1, 2]);
    expectStatus(await server.api('POST', `/mailboxes/${unknownId}/messages/send-batch`, { body: { messages: [{ scopeId, payload: 1 }] }, idem: idem() }), 404);
  });

  it('submit-batch: an item that fails POST /tasks\'s schema answers that route\'s 400 by itself, paths relative to the item; its neighbours are applied', async () => {
    const box = await newBox();
    const good = (n: number) => ({ scopeId, mailboxId: box, taskKey: `batch-judged-${tag()}-${n}`, input: { n } });
    const bad = { scopeId: 'not-a-uuid', mailboxId: box, input: 1, workLimit: '' };
    const res = await server.api('POST', '/tasks/submit-batch', { body: { tasks: [good(1), bad, good(2)] }, idem: idem() });
    expectStatus(res, 200);
    expect(res.body.items.map((i: { status: number }) => i.status)).toEqual([201, 400, 201]);
    const single = await server.api('POST', '/tasks', { body: bad, idem: idem() });
    expectStatus(single, 400);
    const { requestId: _single, ...singleError } = single.body.error;
    expect(res.body.items[1].body.error).toEqual({ ...singleError, requestId: res.headers['x-request-id'] });
    expect(singleError.details.map((d: { path: string }) => d.path)).toEqual(expect.arrayContaining(['body.scopeId', 'body.taskKey']));
    const admittedNow = await admitBatch(box, 10);
    expect(admittedNow.body.items.map((d: Delivery) => d.taskId)).toEqual([res.body.items[0].body.taskId, res.body.items[2].body.taskId]);
  });

  it('send-batch of 100 with one malformed message in the middle sends the other 99 in order, and a replay answers the whole reply', async () => {
    const box = (await server.api('POST', '/mailboxes', { body: { name: `batch-hundred-${tag()}`, backlogLimit: 1_000 }, idem: idem() })).body.id;
    const messages: unknown[] = Array.from({ length: 100 }, (_, i) => ({ scopeId, payload: i }));
    messages[50] = { payload: 50, workKey: 7 };
    const key = idem();
    const res = await server.api('POST', `/mailboxes/${box}/messages/send-batch`, { body: { messages }, idem: key });
    expectStatus(res, 200);
    const statuses = res.body.items.map((i: { status: number }) => i.status);
    expect(statuses).toEqual(Array.from({ length: 100 }, (_, i) => (i === 50 ? 400 : 201)));
    expect(res.body.items[50].body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: expect.arrayContaining([expect.objectContaining({ path: 'body.scopeId' }), expect.objectContaining({ path: 'body.workKey' })]) });
    const ready = (await server.api('GET', `/mailboxes/${box}/messages?state=READY&limit=100`)).body.items;
    expect(ready.map((m: { payload: unknown }) => m.payload)).toEqual(Array.from({ length: 100 }, (_, i) => i).filter((i) => i !== 50));
    const again = await server.api('POST', `/mailboxes/${box}/messages/send-batch`, { body: { messages }, idem: key });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(res.body);
    expect((await server.api('GET', `/mailboxes/${box}/messages?state=READY&limit=100`)).body.items).toHaveLength(99);
  });

  it('complete-, nack- and renew-batch: a malformed item answers its own 400 with the messageId it named (null when it named no UUID)', async () => {
    const box = await newBox();
    await submit(box);
    await submit(box);
    const [d1, d2] = await admitted(box, 2);
    const renewed = await server.api('POST', '/messages/renew-batch', {
      body: { items: [{ messageId: d1!.messageId, token: d1!.token, leaseSeconds: 0 }, { messageId: d2!.messageId, token: d2!.token }] },
    });
    expect(renewed.body.items.map((i: { status: number }) => i.status)).toEqual([400, 200]);
    expect(renewed.body.items[0]).toMatchObject({ messageId: d1!.messageId, body: { error: { code: 'VALIDATION_FAILED', details: [expect.objectContaining({ path: 'body.leaseSeconds' })] } } });
    const nacked = await server.api('POST', '/messages/nack-batch', { body: { items: [{ messageId: d1!.messageId, token: d1!.token }, { messageId: 'nope', token: d2!.token, retry: true }] } });
    expect(nacked.body.items.map((i: { messageId: string | null; status: number }) => [i.messageId, i.status])).toEqual([[d1!.messageId, 400], [null, 400]]);
    expect(nacked.body.items[1].body.error.details).toEqual([expect.objectContaining({ path: 'body.messageId' })]);
    const done = await server.api('POST', '/messages/complete-batch', { body: { items: [{ messageId: d1!.messageId.toUpperCase() }, { messageId: d1!.messageId, token: d1!.token }, { messageId: d2!.messageId, token: d2!.token }] } });
    expect(done.body.items.map((i: { messageId: string; status: number }) => [i.messageId, i.status])).toEqual([[d1!.messageId, 400], [d1!.messageId, 200], [d2!.messageId, 200]]);
    expect((await task(d1!.taskId)).state).toBe('SUCCEEDED');
  });

  it('refuses a batch of no items, of more than 100, of items that are not objects, and a maxTasks out of 1..100 (400)', async () => {
    const box = await newBox();
    const item = { messageId: unknownId, token: 'x' };
    for (const items of [[], Array.from({ length: 101 }, () => item), [item, 1], [item, [item]], [null], 'x']) {
      const res = await server.api('POST', '/messages/complete-batch', { body: { items } });
      expectStatus(res, 400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    }
    for (const maxTasks of [0, 101]) expectStatus(await admitBatch(box, maxTasks), 400);
    expectStatus(await server.api('POST', `/mailboxes/${box}/recv-batch`, { body: { scopeId, holder: 'w', holderSession: 's' } }), 400);
  });
});
