import { defaultSpaceLimits, SeededRandom, timers, type OpContext, type Tx } from '@baton/core';
import { openStore } from '@baton-coordination/server/store/open-store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, storeTargets } from '../support/databases';
import { allEvents, idem, openTestServer, startTestServer, type CallOptions, type Reply, type TestServer } from '../support/server';

/** Concurrency tests exist only on stores that run transactions side by side; elsewhere they are not defined (never reported skipped). */
const itOnlyWhereItRuns = (..._args: unknown[]): void => undefined;

const scopeId = '11111111-1111-4111-8111-111111111111';
const otherScope = '33333333-3333-4333-8333-333333333333';
const unknownId = '22222222-2222-4222-8222-222222222222';
const iso = (ms: number): string => new Date(ms).toISOString();

describe.each(storeTargets())('timers over HTTP on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ server, close } = await openTestServer(target));
  });
  afterAll(async () => close());

  let counter = 0;
  const mailbox = async (extra: Record<string, unknown> = {}, call = server.api): Promise<string> => {
    const res = await call('POST', '/mailboxes', { body: { name: `box-${++counter}`, ...extra }, idem: idem() });
    expect(res.statusCode).toBe(201);
    return res.body.id;
  };
  const armBody = (box: string, extra: Record<string, unknown> = {}) => ({ timerKey: `t-${++counter}`, scopeId, mailboxId: box, payload: { n: counter }, delaySeconds: 10, ...extra });
  const arm = (body: Record<string, unknown>, options: CallOptions = {}, call = server.api) => call('POST', '/timers', { body, idem: idem(), ...options });
  const armed = async (body: Record<string, unknown>, call = server.api): Promise<any> => {
    const res = await arm(body, {}, call);
    expect(res.statusCode).toBe(201);
    return res.body;
  };
  const get = async (id: string) => (await server.api('GET', `/timers/${id}`)).body;
  const cancel = (id: string) => server.api('POST', `/timers/${id}/cancel`, { idem: idem() });
  const messages = async (box: string) => (await server.api('GET', `/mailboxes/${box}/messages?limit=500`)).body.items as any[];
  const sweep = () => server.baton.deps.runDueWork();
  /** A fresh organization and space: limits set here touch no other test. */
  const tenant = async (): Promise<(method: 'GET' | 'POST' | 'PUT', path: string, options?: CallOptions) => Promise<Reply>> => {
    const org = await server.admin('POST', '/orgs', { name: `o-${++counter}`, plan: 'TEAM' });
    const space = await server.admin('POST', `/orgs/${org.body.id}/spaces`, { name: 'main' });
    const key = (await server.admin('POST', `/orgs/${org.body.id}/keys`, { name: 'k' })).body.secret as string;
    return (method, path, options = {}) => {
      const headers: Record<string, string> = { authorization: `Bearer ${key}`, ...options.headers };
      if (options.idem !== undefined) headers['idempotency-key'] = options.idem;
      return server.inject(method, `/v1/spaces/${space.body.id}${path}`, headers, options.body);
    };
  };

  it('arms by fireAt (201, the view); nothing fires 1 ms before; at fireAt it fires once, as a message with workKey timer:<id>', async () => {
    const box = await mailbox();
    const fireAtMs = server.clock.now() + 5_000;
    const body = { timerKey: 'report-due', scopeId, fireAt: iso(fireAtMs), mailboxId: box, payload: { report: 'weekly' } };
    const res = await arm(body);
    expect(res.statusCode).toBe(201);
    const timer = res.body;
    expect(timer).toEqual({
      id: expect.any(String), timerKey: 'report-due', scopeId, mailboxId: box, payload: { report: 'weekly' }, fireAt: iso(fireAtMs), state: 'ARMED',
      firedAt: null, firedMessageId: null, cancelledAt: null, createdAt: iso(server.clock.now()), updatedAt: iso(server.clock.now()),
    });

    server.clock.advance(4_999);
    await sweep();
    expect((await get(timer.id)).state).toBe('ARMED');
    expect(await messages(box)).toEqual([]);

    server.clock.advance(1);
    await sweep();
    const fired = await get(timer.id);
    expect(fired).toMatchObject({ state: 'FIRED', firedAt: iso(fireAtMs), firedMessageId: expect.any(String), updatedAt: iso(fireAtMs) });
    const sent = await messages(box);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ id: fired.firedMessageId, state: 'READY', scopeId, payload: { report: 'weekly' }, workKey: `timer:${timer.id}` });

    // Later sweeps change nothing: one message, one timer.fired.
    server.clock.advance(60_000);
    await sweep();
    await sweep();
    expect(await messages(box)).toHaveLength(1);
    expect(await get(timer.id)).toEqual(fired);
    const events = (await allEvents(server, (all) => all.some((e) => e.type === 'timer.fired' && e.aggregate.id === timer.id))).filter((e) => e.aggregate.id === timer.id);
    expect(events.map((e) => e.type)).toEqual(['timer.armed', 'timer.fired']);
    expect(events[0]).toMatchObject({ scopeId, aggregate: { type: 'timer', id: timer.id }, data: { timerKey: 'report-due', mailboxId: box, fireAt: iso(fireAtMs) } });
    expect(events[1]).toMatchObject({ scopeId, aggregate: { type: 'timer', id: timer.id }, data: { timerKey: 'report-due', mailboxId: box, messageId: fired.firedMessageId, fireAt: iso(fireAtMs) } });
  });

  it('arms by delaySeconds (fireAt = now + delay); a fireAt in the past fires at the next sweep', async () => {
    const box = await mailbox();
    const now = server.clock.now();
    const delayed = await armed(armBody(box, { delaySeconds: 90 }));
    expect(delayed.fireAt).toBe(iso(now + 90_000));
    const past = await armed(armBody(box, { delaySeconds: undefined, fireAt: iso(now - 3_600_000) }));
    expect(past.fireAt).toBe(iso(now - 3_600_000));
    await sweep();
    expect((await get(past.id)).state).toBe('FIRED');
    expect((await get(delayed.id)).state).toBe('ARMED');
    expect(await cancel(delayed.id)).toMatchObject({ statusCode: 200 });
  });

  it('a repeat with the same timerKey and body answers 200 with the timer (also later, in any state); another body 409', async () => {
    const box = await mailbox();
    const body = armBody(box, { delaySeconds: 2 });
    const first = await armed(body);
    server.clock.advance(1_000);
    const again = await arm(body);
    expect(again.statusCode).toBe(200);
    expect(again.body).toEqual(first);
    // Key order and the spelling of ids do not make another body.
    const reordered = await arm({ payload: body.payload, mailboxId: box.toUpperCase(), delaySeconds: 2, scopeId, timerKey: body.timerKey });
    expect(reordered.statusCode).toBe(200);
    for (const other of [{ payload: { n: -1 } }, { delaySeconds: 3 }, { scopeId: otherScope }, { delaySeconds: undefined, fireAt: first.fireAt }]) {
      const res = await arm({ ...body, ...other });
      expect(res.statusCode).toBe(409);
      expect(res.body.error.code).toBe('CONFLICT');
    }
    server.clock.advance(1_000);
    await sweep();
    const repeat = await arm(body);
    expect(repeat.statusCode).toBe(200);
    expect(repeat.body.state).toBe('FIRED');
    expect(await messages(box)).toHaveLength(1);
  });

  it('refuses bad bodies (400), an unknown mailbox (404), a payload above maxPayloadBytes (413), and a missing Idempotency-Key', async () => {
    const box = await mailbox();
    const now = server.clock.now();
    const bad = [
      armBody(box, { delaySeconds: undefined }),
      armBody(box, { fireAt: iso(now + 1_000) }),
      armBody(box, { delaySeconds: 30 * 86_400 + 1 }),
      armBody(box, { delaySeconds: -1 }),
      armBody(box, { delaySeconds: undefined, fireAt: iso(now + 30 * 86_400_000 + 1) }),
      armBody(box, { timerKey: '' }),
      armBody(box, { timerKey: 'k'.repeat(513) }),
      armBody(box, { payload: undefined }),
      armBody(box, { scopeId: 'not-a-uuid' }),
    ];
    for (const body of bad) expect({ body, status: (await arm(body)).statusCode }).toEqual({ body, status: 400 });
    expect((await arm(armBody(box, { delaySeconds: 30 * 86_400 }))).statusCode).toBe(201);
    expect((await arm(armBody(box, { timerKey: 'k'.repeat(512) }))).statusCode).toBe(201);
    const missing = await arm(armBody(unknownId));
    expect(missing.statusCode).toBe(404);
    const large = await arm(armBody(box, { payload: 'x'.repeat(65_537) }));
    expect(large.statusCode).toBe(413);
    expect(large.body.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', message: expect.stringMatching(/^payload is 65539 bytes of JSON; at most 65536/) });
    const noKey = await server.api('POST', '/timers', { body: armBody(box) });
    expect(noKey.body.error.code).toBe('IDEMPOTENCY_KEY_REQUIRED');
    // Leave nothing ARMED behind for the sweeps of later tests.
    for (const t of (await server.api('GET', `/timers?state=ARMED&limit=500`)).body.items) await cancel(t.id);
  });

  it('cancel: ARMED to CANCELLED (it never fires), a repeat answers 200, a FIRED timer is 409, an unknown one 404', async () => {
    const box = await mailbox();
    const timer = await armed(armBody(box, { delaySeconds: 1 }));
    const cancelled = await cancel(timer.id);
    expect(cancelled.statusCode).toBe(200);
    expect(cancelled.body).toMatchObject({ state: 'CANCELLED', cancelledAt: iso(server.clock.now()), firedMessageId: null });
    const repeat = await cancel(timer.id);
    expect(repeat.statusCode).toBe(200);
    expect(repeat.body).toEqual(cancelled.body);
    server.clock.advance(2_000);
    await sweep();
    expect((await get(timer.id)).state).toBe('CANCELLED');
    expect(await messages(box)).toEqual([]);

    const fired = await armed(armBody(box, { delaySeconds: 0 }));
    await sweep();
    const refused = await cancel(fired.id);
    expect(refused.statusCode).toBe(409);
    expect(refused.body.error.code).toBe('CONFLICT');
    expect((await cancel(unknownId)).body.error).toMatchObject({ code: 'NOT_FOUND', message: 'timer not found' });
    expect((await server.api('GET', `/timers/${unknownId}`)).body.error).toMatchObject({ code: 'NOT_FOUND', message: 'timer not found' });
    const events = (await allEvents(server, (all) => all.some((e) => e.type === 'timer.cancelled' && e.aggregate.id === timer.id))).filter((e) => e.aggregate.id === timer.id);
    expect(events.map((e) => e.type)).toEqual(['timer.armed', 'timer.cancelled']);
    expect(events[1].data).toMatchObject({ reason: 'REQUESTED', timerKey: timer.timerKey });
  });

  it('lists oldest first with state and scopeId filters, paging by cursor', async () => {
    const box = await mailbox();
    const a = await armed(armBody(box, { scopeId: otherScope }));
    server.clock.advance(1);
    const b = await armed(armBody(box, { scopeId: otherScope, delaySeconds: 100 }));
    await cancel(b.id);
    const firstPage = (await server.api('GET', `/timers?scopeId=${otherScope}&limit=1`)).body;
    expect(firstPage.items.map((t: any) => t.id)).toEqual([a.id]);
    const secondPage = (await server.api('GET', `/timers?scopeId=${otherScope}&limit=1&cursor=${firstPage.nextCursor}`)).body;
    expect(secondPage).toEqual({ items: [expect.objectContaining({ id: b.id })], nextCursor: null });
    expect((await server.api('GET', `/timers?scopeId=${otherScope}&state=CANCELLED`)).body.items.map((t: any) => t.id)).toEqual([b.id]);
    expect((await server.api('GET', `/timers?scopeId=${otherScope}&state=ARMED,FIRED`)).body.items.map((t: any) => t.id)).toEqual([a.id]);
    expect((await server.api('GET', '/timers?state=DONE')).statusCode).toBe(400);
    await cancel(a.id);
  });

  it('wakes a recv long-polling the mailbox when a timer fires', async () => {
    const box = await mailbox();
    const pending = server.api('POST', `/mailboxes/${box}/recv`, { body: { scopeId, holder: 'worker', holderSession: 's1', waitMs: 20_000 } });
    await new Promise((r) => setTimeout(r, 50));
    const timer = await armed(armBody(box, { delaySeconds: 0, payload: 'wake up' }));
    await sweep();
    const res = await pending;
    expect(res.statusCode).toBe(200);
    expect(res.body).toMatchObject({ payload: 'wake up', messageId: (await get(timer.id)).firedMessageId });
  });

  it('past maxArmedTimers ARMED timers an arm is 429 BACKLOG_FULL; fired and cancelled ones make room', async () => {
    const call = await tenant();
    expect((await call('PUT', '/limits', { body: { maxArmedTimers: 2 } })).statusCode).toBe(200);
    const box = await mailbox({}, call);
    const first = await armed(armBody(box, { delaySeconds: 0 }), call);
    const second = await armed(armBody(box, { delaySeconds: 3_600 }), call);
    const full = await arm(armBody(box), {}, call);
    expect(full.statusCode).toBe(429);
    expect(full.body.error).toMatchObject({ code: 'BACKLOG_FULL', message: 'the space holds 2 ARMED timers (maxArmedTimers 2; PUT /limits raises it)' });
    expect(full.headers['retry-after']).toBe('1');
    // A repeat of an existing key is not a new timer: it still answers.
    expect((await call('POST', '/timers', { body: armBody(box, { timerKey: second.timerKey, payload: second.payload, delaySeconds: 3_600 }), idem: idem() })).statusCode).toBe(200);
    await sweep(); // `first` fires
    expect((await call('GET', `/timers/${first.id}`)).body.state).toBe('FIRED');
    const third = await armed(armBody(box), call);
    expect((await arm(armBody(box), {}, call)).statusCode).toBe(429);
    expect((await call('POST', `/timers/${second.id}/cancel`, { idem: idem() })).statusCode).toBe(200);
    expect((await arm(armBody(box), {}, call)).statusCode).toBe(201);
    expect((await call('POST', `/timers/${third.id}/cancel`, { idem: idem() })).statusCode).toBe(200);
  });

  it('a firing its mailbox has no room for waits: the timer stays ARMED and fires once room is made, a second later', async () => {
    const box = await mailbox({ backlogLimit: 1 });
    expect((await server.api('POST', `/mailboxes/${box}/messages`, { body: { scopeId, payload: 'first' }, idem: idem() })).statusCode).toBe(201);
    const timer = await armed(armBody(box, { delaySeconds: 0 }));
    await sweep();
    expect((await get(timer.id)).state).toBe('ARMED');
    const d = (await server.api('POST', `/mailboxes/${box}/recv`, { body: { scopeId, holder: 'w', holderSession: 's' } })).body;
    expect((await server.api('POST', `/messages/${d.messageId}/complete`, { body: { token: d.token } })).statusCode).toBe(200);
    await sweep(); // deferred a second: not yet
    expect((await get(timer.id)).state).toBe('ARMED');
    server.clock.advance(1_000);
    await sweep();
    expect((await get(timer.id)).state).toBe('FIRED');
    expect((await messages(box)).filter((m) => m.workKey === `timer:${timer.id}`)).toHaveLength(1);
  });

  it("a firing sends under its space's maxBacklog, but not under a maxPayloadBytes lowered after the arm", async () => {
    const call = await tenant();
    const box = await mailbox({}, call);
    const big = await armed(armBody(box, { delaySeconds: 0, payload: 'x'.repeat(100) }), call);
    expect((await call('PUT', '/limits', { body: { maxBacklog: 1, maxPayloadBytes: 10 } })).statusCode).toBe(200);
    await sweep(); // the space's one message of room goes to the timer, whose payload the lowered limit would refuse
    expect((await call('GET', `/timers/${big.id}`)).body.state).toBe('FIRED');
    expect((await call('PUT', '/limits', { body: { maxPayloadBytes: 65_536 } })).statusCode).toBe(200);
    const waiting = await armed(armBody(box, { delaySeconds: 0 }), call);
    await sweep(); // the space is at maxBacklog: deferred, though the mailbox has room
    expect((await call('GET', `/timers/${waiting.id}`)).body.state).toBe('ARMED');
    expect((await call('POST', `/timers/${waiting.id}/cancel`, { idem: idem() })).statusCode).toBe(200);
  });

  /** `tx` as an arm sees it when a concurrent arm of the key commits after its read: getByKey misses the timer (always, with `winnerSeen` false). */
  const racedTx = (tx: Tx, winnerSeen: boolean): Tx => {
    let reads = 0;
    const repo = tx.timers;
    const getByKey: typeof repo.getByKey = async (...args) => (++reads === 1 || !winnerSeen ? undefined : repo.getByKey(...args));
    const racedTimers = new Proxy(repo, { get: (t, p) => (p === 'getByKey' ? getByKey : bound(t, p)) });
    return new Proxy(tx, { get: (t, p) => (p === 'timers' ? racedTimers : bound(t, p)) });
  };
  const bound = (target: object, p: string | symbol): unknown => {
    const value: unknown = Reflect.get(target, p);
    return typeof value === 'function' ? value.bind(target) : value;
  };

  it('an arm whose insert loses to a concurrent arm of the key answers as a repeat of the winner; a winner not yet visible is CONFLICT', async () => {
    const box = await mailbox();
    const body = armBody(box);
    const winner = await armed(body);
    const armIn = (winnerSeen: boolean, asked: typeof body) =>
      server.baton.deps.store.transaction((tx) => {
        const ctx: OpContext = { tx: racedTx(tx, winnerSeen), spaceId: server.spaceId, nowMs: server.clock.now(), random: new SeededRandom(5), limits: defaultSpaceLimits };
        return timers.arm(ctx, asked as Parameters<typeof timers.arm>[1]);
      });
    expect(await armIn(true, body)).toEqual({ created: false, view: expect.objectContaining({ id: winner.id, state: 'ARMED' }) });
    await expect(armIn(true, { ...body, payload: { n: -1 } })).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(armIn(false, body)).rejects.toMatchObject({ code: 'CONFLICT', message: `timerKey ${body.timerKey} is being armed; retry` });
    expect((await server.api('GET', `/timers?state=ARMED&limit=500`)).body.items.filter((t: any) => t.timerKey === body.timerKey)).toHaveLength(1);
    await cancel(winner.id);
  });

  it('a message already holding the workKey timer:<id> is taken as the firing: no second message', async () => {
    const box = await mailbox();
    const timer = await armed(armBody(box, { delaySeconds: 0 }));
    const byHand = await server.api('POST', `/mailboxes/${box}/messages`, { body: { scopeId, payload: 'by hand', workKey: `timer:${timer.id}` }, idem: idem() });
    expect(byHand.statusCode).toBe(201);
    await sweep();
    expect(await get(timer.id)).toMatchObject({ state: 'FIRED', firedMessageId: byHand.body.id });
    expect(await messages(box)).toHaveLength(1);
  });

  it('a backlog of due timers fires oldest fireAt first, in bounded batches', async () => {
    const box = await mailbox({ backlogLimit: 1_000 });
    const base = server.clock.now() + 1_000;
    const offsets = Array.from({ length: 130 }, (_, i) => i).sort(() => Math.random() - 0.5);
    const byOffset = new Map<number, string>();
    for (const i of offsets) byOffset.set(i, (await armed(armBody(box, { delaySeconds: undefined, fireAt: iso(base + i * 10), payload: i }))).id);
    server.clock.advance(3_600_000); // the server was down for an hour
    const store = server.baton.deps.store;
    const firedOf = (tx: Tx) => timers.fireDue(tx, server.clock.now(), 10, new SeededRandom(7));
    expect(await store.transaction(firedOf)).toBe(10);
    const firstBatch = (await messages(box)).map((m) => m.payload);
    expect(firstBatch).toEqual(Array.from({ length: 10 }, (_, i) => i));
    await sweep(); // 120 more: one full batch of 100, then 20
    expect((await messages(box)).map((m) => m.payload)).toEqual(Array.from({ length: 130 }, (_, i) => i));
    for (const [i, id] of byOffset) if (i % 40 === 0) expect((await get(id)).state).toBe('FIRED');
  });

  it('sweeps racing each other fire a timer once', async () => {
    const box = await mailbox();
    const many: any[] = [];
    for (let i = 0; i < 30; i++) many.push(await armed(armBody(box, { delaySeconds: 0 })));
    await Promise.all([sweep(), sweep(), sweep()]);
    expect(await messages(box)).toHaveLength(30);
    for (const t of many) expect((await get(t.id)).state).toBe('FIRED');
    const events = await allEvents(server, (all) => many.every((t) => all.some((e) => e.type === 'timer.fired' && e.aggregate.id === t.id)));
    const ids = new Set(many.map((t) => t.id));
    expect(events.filter((e) => e.type === 'timer.fired' && ids.has(e.aggregate.id))).toHaveLength(30);
  });

  it('cancelArmedInScope cancels the ARMED timers of some scopes, up to a limit, and says how many (run cancel)', async () => {
    const box = await mailbox();
    const runScope = crypto.randomUUID();
    const childScope = crypto.randomUUID();
    const mine = [await armed(armBody(box, { scopeId: runScope })), await armed(armBody(box, { scopeId: childScope })), await armed(armBody(box, { scopeId: runScope }))];
    const fired = await armed(armBody(box, { scopeId: runScope, delaySeconds: 0 }));
    await sweep();
    const bystander = await armed(armBody(box, { scopeId: otherScope }));
    const cancelIn = (limit: number) =>
      server.baton.deps.store.transaction((tx) => {
        const ctx: OpContext = { tx, spaceId: server.spaceId, nowMs: server.clock.now(), random: new SeededRandom(3), limits: defaultSpaceLimits };
        return timers.cancelArmedInScope(ctx, [runScope, childScope], limit);
      });
    expect(await cancelIn(2)).toBe(2);
    expect(await cancelIn(2)).toBe(1);
    expect(await cancelIn(2)).toBe(0);
    for (const t of mine) expect((await get(t.id)).state).toBe('CANCELLED');
    expect((await get(fired.id)).state).toBe('FIRED');
    expect((await get(bystander.id)).state).toBe('ARMED');
    const counts = await server.baton.deps.store.read((tx) => timers.countInScope(tx, server.spaceId, runScope));
    expect(counts).toEqual({ ARMED: 0, FIRED: 1, CANCELLED: 2 });
    await cancel(bystander.id);
    const events = await allEvents(server, (all) => mine.every((t) => all.some((e) => e.type === 'timer.cancelled' && e.aggregate.id === t.id)));
    expect(events.find((e) => e.type === 'timer.cancelled' && e.aggregate.id === mine[0].id).data.reason).toBe('RUN_CANCELLED');
  });

  (target.name === 'postgres' ? it : itOnlyWhereItRuns)('two servers sweeping one PostgreSQL fire each timer once', async () => {
    const db = await createTestDatabase();
    const stores = [await openStore({ kind: 'postgres', url: db.url }), await openStore({ kind: 'postgres', url: db.url })];
    const a = await startTestServer(stores[0]!, { clock: server.clock });
    const b = await startTestServer(stores[1]!, { clock: server.clock, adminToken: null });
    try {
      const box = await mailbox({}, a.api);
      const ids: string[] = [];
      for (let i = 0; i < 150; i++) ids.push((await armed(armBody(box, { delaySeconds: 0 }), a.api)).id);
      await Promise.all([a.baton.deps.runDueWork(), b.baton.deps.runDueWork(), a.baton.deps.runDueWork(), b.baton.deps.runDueWork()]);
      const sent = (await a.api('GET', `/mailboxes/${box}/messages?limit=500`)).body.items as any[];
      expect(sent).toHaveLength(150);
      expect(new Set(sent.map((m) => m.workKey))).toEqual(new Set(ids.map((id) => `timer:${id}`)));
      const fired = (await a.api('GET', '/timers?state=FIRED&limit=500')).body.items as any[];
      expect(fired).toHaveLength(150);
      const events = await allEvents(a, (all) => all.filter((e) => e.type === 'timer.fired').length >= 150);
      expect(events.filter((e) => e.type === 'timer.fired')).toHaveLength(150);
    } finally {
      await a.close();
      await b.close();
      for (const s of stores) await s.close();
      await db.drop();
    }
  });
});
