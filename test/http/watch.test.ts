import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SystemClock, type LocalNotifier, type Store } from '@baton/core';
import { createBaton, type Baton } from '@baton-coordination/server/host/baton';
import { watchPoll } from '@baton-coordination/server/http/watch-poll';
import { PgNotifier } from '@baton-coordination/server/notify/pg-notifier';
import { openStore } from '@baton-coordination/server/store/open-store';
import { createTestDatabase, postgresUrl, storeTargets, type TestDatabase } from '../support/databases';
import { idem, startTestServer, type Reply, type TestServer } from '../support/server';

/**
 * GET /watch (docs/api.md, "Watch") on every store: filters, cursor, limit, the long poll and its
 * wake-ups. Each test filters on aggregates or scopes of its own, or starts from the journal's
 * current end, so the suite's other events do not disturb it. Matching reads use waitSeconds:
 * on PostgreSQL an event becomes visible only once older writers end (docs/event-journal.md).
 */
describe.each(storeTargets())('GET /watch on $name', (target) => {
  let store: Store;
  let server: TestServer;
  let closeStore: () => Promise<void>;

  beforeAll(async () => {
    const opened = await target.open();
    store = opened.store;
    closeStore = opened.close;
    server = await startTestServer(store);
  });
  afterAll(async () => {
    await server.close();
    await closeStore();
  });

  const watch = (query: string, at: TestServer = server): Promise<Reply> => at.api('GET', `/watch?${query}`);
  const notifier = (at: TestServer = server) => at.baton.deps.notifier as LocalNotifier;
  const parked = async (at: TestServer = server): Promise<void> => {
    await expect.poll(() => notifier(at).parked, { timeout: 5_000, interval: 5 }).toBeGreaterThan(0);
  };
  const expectInvalid = (res: Reply, parameter: string): void => {
    expect(res.statusCode, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.message).toContain(parameter);
  };
  const barrier = async (scopeId: string, at: TestServer = server): Promise<string> => {
    const res = await at.api('POST', '/barriers', { body: { scopeId, target: 10 }, idem: idem() });
    expect(res.statusCode).toBe(201);
    return res.body.id as string;
  };
  const arrive = async (id: string, arrivalKey: string): Promise<void> => {
    expect((await server.api('POST', `/barriers/${id}/arrive`, { body: { arrivalKey } })).statusCode).toBe(200);
  };
  const budget = async (): Promise<string> => {
    const res = await server.api('POST', '/budgets', { body: { name: `b-${randomUUID()}`, currency: 'USD', scale: 2, limitMinor: '100' }, idem: idem() });
    expect(res.statusCode, JSON.stringify(res.body)).toBe(201);
    return res.body.id as string;
  };
  /** The journal's end as visible now: a cursor after every event seen so far. */
  const tail = async (): Promise<string> => {
    let cursor = '0';
    for (;;) {
      const page = await server.api('GET', `/events?limit=500&cursor=${cursor}`);
      if (page.body.items.length === 0) return cursor;
      cursor = page.body.nextCursor;
    }
  };
  /** Follows the watch from `cursor` until `count` events matched (each read waits for a match). */
  const follow = async (query: string, count: number, cursor = '0'): Promise<{ items: any[]; nextCursor: string }> => {
    const items: any[] = [];
    while (items.length < count) {
      // On PostgreSQL another test file's open transaction can hold the journal's horizon back for
      // longer than a watch re-reads on its own; the manual clock then ends the wait, and the
      // loop reads again from the cursor (nothing is skipped either way).
      const pending = watch(`${query}&cursor=${cursor}&waitSeconds=1`);
      const nudge = setInterval(() => server.clock.advance(1_000), 2_000);
      const res = await pending.finally(() => clearInterval(nudge));
      expect(res.statusCode, JSON.stringify(res.body)).toBe(200);
      items.push(...res.body.items);
      cursor = res.body.nextCursor;
    }
    return { items, nextCursor: cursor };
  };

  it('without a filter answers the events page of /events at once', async () => {
    const id = await barrier(randomUUID());
    const { items } = await follow(`aggregate=barrier:${id}`, 1);
    const res = await watch('limit=500');
    expect(res.statusCode).toBe(200);
    expect(res.body.items.length).toBeGreaterThan(0);
    const events = await server.api('GET', '/events?limit=500');
    expect(res.body).toEqual(events.body);
    expect(items[0]).toMatchObject({ type: 'barrier.created', aggregate: { type: 'barrier', id } });
  });

  it('filters by aggregate type:id and by aggregate type', async () => {
    const one = await barrier(randomUUID());
    const other = await barrier(randomUUID());
    await arrive(one, 'w1');
    const { items } = await follow(`aggregate=barrier:${one}`, 2);
    expect(items.map((e) => e.type)).toEqual(['barrier.created', 'barrier.arrived']);
    expect(items.every((e) => e.aggregate.id === one)).toBe(true);
    // Upper-case ids are stored lower case: the filter still matches.
    expect((await follow(`aggregate=barrier:${one.toUpperCase()}`, 2)).items).toEqual(items);

    const from = await tail();
    await budget();
    await arrive(other, 'w1');
    const byType = await follow('aggregate=barrier', 1, from);
    expect(byType.items.every((e) => e.aggregate.type === 'barrier')).toBe(true);
    expect(byType.items.map((e) => e.aggregate.id)).toContain(other);
  });

  it('filters by types, exact and prefix.*', async () => {
    const from = await tail();
    const budgetId = await budget();
    const id = await barrier(randomUUID());
    await arrive(id, 'w1');
    const exact = await follow('types=barrier.arrived', 1, from);
    expect(exact.items.map((e) => e.type)).toEqual(['barrier.arrived']);
    const prefixed = await follow('types=barrier.*', 2, from);
    expect(prefixed.items.map((e) => e.type)).toEqual(['barrier.created', 'barrier.arrived']);
    const mixed = await follow('types=budget.created,barrier.arrived', 2, from);
    expect(mixed.items.map((e) => [e.type, e.aggregate.id])).toEqual([['budget.created', budgetId], ['barrier.arrived', id]]);
  });

  it('filters by scopeId: the scope, the gate scopes below it, and payloads naming them', async () => {
    const parent = randomUUID();
    const box = await server.api('POST', '/mailboxes', { body: { name: `watch-box-${randomUUID()}` }, idem: idem() });
    const group = await server.api('POST', '/task-groups', { body: { mailboxId: box.body.id, condition: 'FIRST_ACCEPTED', parentScopeId: parent }, idem: idem() });
    expect(group.statusCode, JSON.stringify(group.body)).toBe(201);
    const gate = group.body.scopeId as string;
    const nested = await server.api('POST', '/task-groups', { body: { mailboxId: box.body.id, condition: 'FIRST_ACCEPTED', parentScopeId: gate }, idem: idem() });
    const inParent = await barrier(parent);
    const inGate = await barrier(gate);
    await barrier(randomUUID());

    // group.created (scopeId: the gate scope, data.parentScopeId: the parent), twice, and both barriers.
    const { items } = await follow(`scopeId=${parent}`, 4);
    expect(items.map((e) => [e.type, e.aggregate.id])).toEqual([
      ['group.created', group.body.groupId],
      ['group.created', nested.body.groupId],
      ['barrier.created', inParent],
      ['barrier.created', inGate],
    ]);
    const rest = await watch(`scopeId=${parent}&cursor=${(await follow(`scopeId=${parent}`, 4)).nextCursor}`);
    expect(rest.body.items).toEqual([]);
    // From the gate scope: its own group (by payload and scope), the nested group, its barrier; not the parent's.
    const below = await follow(`scopeId=${gate.toUpperCase()}`, 3);
    expect(below.items.map((e) => e.aggregate.id)).toEqual([group.body.groupId, nested.body.groupId, inGate]);
  });

  it('accepts a well-formed type Baton does not emit, matching nothing', async () => {
    const res = await watch('types=nothing.matches,future.*');
    expect(res.statusCode).toBe(200);
    expect(res.body.items).toEqual([]);
  });

  it('ANDs the filters', async () => {
    const scope = randomUUID();
    const id = await barrier(scope);
    await arrive(id, 'w1');
    const { items } = await follow(`scopeId=${scope}&types=barrier.arrived&aggregate=barrier`, 1);
    expect(items.map((e) => e.type)).toEqual(['barrier.arrived']);
    const none = await watch(`scopeId=${scope}&types=budget.*`);
    expect(none.body.items).toEqual([]);
  });

  it('resumes from a cursor, honours limit, and advances past events that do not match', async () => {
    const id = await barrier(randomUUID());
    for (const key of ['a', 'b', 'c']) await arrive(id, key);
    const all = await follow(`aggregate=barrier:${id}`, 4);
    const first = await watch(`aggregate=barrier:${id}&limit=2`);
    expect(first.body.items).toEqual(all.items.slice(0, 2));
    expect(first.body.nextCursor).toBe(all.items[1].eventId);
    const second = await watch(`aggregate=barrier:${id}&limit=2&cursor=${first.body.nextCursor}`);
    expect(second.body.items).toEqual(all.items.slice(2, 4));

    // Nothing matches: the page is empty, yet the cursor moved to the last event examined.
    const nothing = await watch(`aggregate=barrier:${randomUUID()}&limit=500&cursor=${first.body.nextCursor}`);
    expect(nothing.body.items).toEqual([]);
    expect(BigInt(nothing.body.nextCursor)).toBeGreaterThanOrEqual(BigInt(all.nextCursor));
  });

  it('a parked watch is answered by a later matching commit, not by a commit it cannot match', async () => {
    const scope = randomUUID();
    const id = await barrier(scope);
    const from = (await follow(`aggregate=barrier:${id}`, 1)).nextCursor;
    const reads = vi.spyOn(server.baton.deps.store, 'read');
    try {
      let answered = false;
      const poll = watch(`types=barrier.cancelled&aggregate=barrier:${id}&cursor=${from}&waitSeconds=30`).then((r) => ((answered = true), r));
      await parked();
      const readsWhenParked = reads.mock.calls.length;
      await budget();
      await barrier(scope);
      await new Promise((r) => setTimeout(r, 50));
      expect(answered).toBe(false);
      expect(reads.mock.calls.length).toBe(readsWhenParked);

      // Same aggregate, other type: wakes (its topic), reads, finds nothing and parks again.
      await arrive(id, 'w1');
      await new Promise((r) => setTimeout(r, 50));
      expect(answered).toBe(false);
      expect((await server.api('POST', `/barriers/${id}/cancel`, { idem: idem() })).statusCode).toBe(200);
      const res = await poll;
      expect(res.statusCode).toBe(200);
      expect(res.body.items.map((e: any) => e.type)).toEqual(['barrier.cancelled']);
      expect(res.body.nextCursor).toBe(res.body.items[0].eventId);
    } finally {
      reads.mockRestore();
    }
  });

  it('answers when the wait ends with what it examined, and releases its hold when the client leaves', async () => {
    const from = await tail();
    const poll = watch(`types=barrier.cancelled&aggregate=barrier:${randomUUID()}&cursor=${from}&waitSeconds=2`);
    await parked();
    await server.admin('POST', '/clock/advance', { ms: 2_000 });
    const res = await poll;
    expect(res.statusCode).toBe(200);
    expect(res.body.items).toEqual([]);
    expect(BigInt(res.body.nextCursor)).toBeGreaterThanOrEqual(BigInt(from));
    expect(notifier().parked).toBe(0);

    const left = new AbortController();
    const held = watchPoll(server.baton.deps, {
      spaceId: server.spaceId, filter: { types: null, aggregate: { type: 'barrier', id: randomUUID() }, scopeId: null }, cursor: from, limit: 10, waitMs: 30_000, signal: left.signal,
    });
    await parked();
    left.abort();
    expect((await held).items).toEqual([]);
    expect(notifier().parked).toBe(0);
  });

  it('returns at once when the server starts draining', async () => {
    const draining = await startTestServer(store, { seed: 17 });
    const poll = watch(`aggregate=barrier:${randomUUID()}&waitSeconds=30`, draining);
    await parked(draining);
    const closed = draining.close();
    const res = await poll;
    expect(res.statusCode).toBe(200);
    expect(res.body.items).toEqual([]);
    await closed;
    expect(notifier(draining).parked).toBe(0);
  });

  it('refuses bad parameters with 400 naming them', async () => {
    expectInvalid(await watch('waitSeconds=31'), 'waitSeconds');
    expectInvalid(await watch('waitSeconds=-1'), 'waitSeconds');
    expectInvalid(await watch('waitSeconds=1.5'), 'waitSeconds');
    expectInvalid(await watch('limit=0'), 'limit');
    expectInvalid(await watch('limit=501'), 'limit');
    expectInvalid(await watch('cursor=abc'), 'cursor');
    expectInvalid(await watch('scopeId=not-a-uuid'), 'scopeId');
    expectInvalid(await watch('types=Task.running'), 'types');
    expectInvalid(await watch('types=task'), 'types');
    expectInvalid(await watch('types=task.*,,'), 'types');
    expectInvalid(await watch('aggregate=Task'), 'aggregate');
    expectInvalid(await watch('aggregate=task:'), 'aggregate');
  });

  it('needs coordination_read', async () => {
    const key = await server.newKey({ permissions: ['usage_read'] });
    const res = await server.api('GET', '/watch', { key });
    expect(res.statusCode).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
  });
});

/** Two servers on one PostgreSQL, sharing wake-ups through PgNotifier (test/pg-notifier.test.ts). Real time. */
describe.runIf(postgresUrl())('GET /watch across two servers on PostgreSQL', () => {
  const adminToken = 'watch-two-servers';
  const clock = new SystemClock();
  let db: TestDatabase;
  const servers: { baton: Baton; store: Store; notifier: PgNotifier }[] = [];
  const startServer = async () => {
    const store = await openStore({ kind: 'postgres', url: db.url });
    const notifier = await PgNotifier.start({ url: db.url, clock });
    const server = { baton: await createBaton({ store, clock, adminToken, notifier }), store, notifier };
    servers.push(server);
    return server;
  };
  const call = async (baton: Baton, method: 'GET' | 'POST', url: string, key: string, body?: object) => {
    const res = await baton.app.inject({ method, url, headers: { authorization: `Bearer ${key}`, 'idempotency-key': `watch-${randomUUID()}` }, ...(body ? { payload: body } : {}) });
    return { statusCode: res.statusCode, body: JSON.parse(res.body) };
  };
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    for (const s of servers) {
      await s.baton.drainAndClose();
      await s.notifier.close();
      await s.store.close();
    }
    await db?.drop();
  });

  it('a watch parked on server B is answered by a matching commit on server A, not by one it cannot match', async () => {
    const a = await startServer();
    const b = await startServer();
    const org = await call(a.baton, 'POST', '/admin/v1/orgs', adminToken, { name: 'acme', plan: 'TEAM' });
    const space = await call(a.baton, 'POST', `/admin/v1/orgs/${org.body.id}/spaces`, adminToken, { name: 'main' });
    const key = (await call(a.baton, 'POST', `/admin/v1/orgs/${org.body.id}/keys`, adminToken, { name: 'test' })).body.secret as string;
    const base = `/v1/spaces/${space.body.id}`;
    const scopeId = randomUUID();

    let answered = false;
    const t0 = performance.now();
    const poll = call(b.baton, 'GET', `${base}/watch?scopeId=${scopeId}&types=barrier.created&waitSeconds=20`, key).then((r) => ((answered = true), r));
    await expect.poll(() => b.notifier.parked, { timeout: 5_000, interval: 5 }).toBeGreaterThan(0);
    expect((await call(a.baton, 'POST', `${base}/barriers`, key, { scopeId: randomUUID(), target: 1 })).statusCode).toBe(201);
    await new Promise((r) => setTimeout(r, 300));
    expect(answered).toBe(false);
    const created = await call(a.baton, 'POST', `${base}/barriers`, key, { scopeId, target: 1 });
    expect(created.statusCode).toBe(201);
    const res = await poll;
    expect(res.statusCode).toBe(200);
    expect(res.body.items.map((e: any) => [e.type, e.aggregate.id])).toEqual([['barrier.created', created.body.id]]);
    expect(performance.now() - t0).toBeLessThan(5_000);
  });
});
