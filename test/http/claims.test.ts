import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { allEvents, idem, openTestServer, startMs, type TestServer } from '../support/server';

const scopeId = '22222222-2222-4222-8222-222222222222';
const a = { holder: 'worker-a', holderSession: 'session-a-1' };
const b = { holder: 'worker-b', holderSession: 'session-b-1' };

describe.each(storeTargets())('claims over HTTP on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;
  let keys = 0;

  beforeAll(async () => {
    ({ server, close } = await openTestServer(target));
  });
  afterAll(async () => close());

  /** A claimKey no other test uses: tests share the server (and its clock). */
  const freshKey = (): string => `lock/${++keys}/${idem()}`;
  const acquire = (claimKey: string, who: { holder: string; holderSession: string }, extra: Record<string, unknown> = {}, key = idem()) =>
    server.api('POST', '/claims', { body: { claimKey, scopeId, ...who, ...extra }, idem: key });
  const renew = (id: string, token: string, leaseSeconds?: number) => server.api('POST', `/claims/${id}/renew`, { body: { token, ...(leaseSeconds ? { leaseSeconds } : {}) } });
  const release = (id: string, token: string) => server.api('POST', `/claims/${id}/release`, { body: { token } });
  const sweep = async (ms: number) => {
    server.clock.advance(ms);
    await server.baton.deps.runDueWork();
  };
  const iso = (ms: number) => new Date(ms).toISOString();
  const claimEvents = async (id: string, ready: (events: any[]) => boolean) => {
    const mine = (all: any[]) => all.filter((e) => e.aggregate.type === 'claim' && e.aggregate.id === id);
    return mine(await allEvents(server, (all) => ready(mine(all))));
  };

  it('a token cannot be computed from what the API shows: the claim id and a known holderSession are not enough', async () => {
    const claimKey = freshKey();
    const { createHmac, randomUUID } = await import('node:crypto');
    const got = await acquire(claimKey, a, { scopeId: randomUUID() }); // its own scope: the list tests count this one's
    expect(got.statusCode).toBe(201);
    const guess = createHmac('sha256', a.holderSession).update(`baton-claim-token\u0000${server.spaceId}\u0000${got.body.id}`, 'utf8').digest('base64url');
    expect((await release(got.body.id, guess)).body.error.code).toBe('LEASE_LOST');
    expect(JSON.stringify((await server.api('GET', `/claims/${got.body.id}`)).body)).not.toMatch(/nonce|"token"/i);
    expect((await release(got.body.id, got.body.token)).statusCode).toBe(200);
  });

  it('acquires: 201 with token, fencing token 1 and a 30 s lease; the view never shows the token', async () => {
    const claimKey = freshKey();
    const now = server.clock.now();
    const got = await acquire(claimKey, a);
    expect(got.statusCode).toBe(201);
    expect(got.body).toMatchObject({ claimKey, scopeId, ...a, fencingToken: 1, state: 'HELD', leaseExpiresAt: iso(now + 30_000), endedAt: null });
    expect(got.body.token).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const view = await server.api('GET', `/claims/${got.body.id}`);
    expect(view.statusCode).toBe(200);
    expect(view.body).toEqual({ id: got.body.id, claimKey, scopeId, holder: a.holder, fencingToken: 1, state: 'HELD', leaseExpiresAt: iso(now + 30_000), endedAt: null, createdAt: iso(now), updatedAt: iso(now) });
    expect(JSON.stringify(view.body)).not.toContain(got.body.token);
    expect(JSON.stringify(view.body)).not.toContain(a.holderSession);

    const events = await claimEvents(got.body.id, (e) => e.length >= 1);
    expect(events).toEqual([expect.objectContaining({ type: 'claim.acquired', scopeId, data: { claimKey, holder: a.holder, fencingToken: 1, leaseExpiresAt: iso(now + 30_000) } })]);
  });

  it('answers a re-claim by the same holder and session with 200 and the same claim and token; an Idempotency-Key repeat replays', async () => {
    const claimKey = freshKey();
    const key = idem();
    const first = await acquire(claimKey, a, { leaseSeconds: 60 }, key);
    const replay = await acquire(claimKey, a, { leaseSeconds: 60 }, key);
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual(first.body);

    server.clock.advance(1_000);
    const again = await acquire(claimKey, a);
    expect(again.statusCode).toBe(200);
    expect(again.body).toEqual(first.body);
    // Another session of the same holder is someone else.
    const otherSession = await acquire(claimKey, { ...a, holderSession: 'session-a-2' });
    expect(otherSession.statusCode).toBe(409);
    expect(otherSession.body.error.code).toBe('CLAIM_HELD');
  });

  it('refuses a key held by another with 409 CLAIM_HELD whose details object names the holder and lease end', async () => {
    const claimKey = freshKey();
    const held = await acquire(claimKey, a);
    const refused = await acquire(claimKey, b);
    expect(refused.statusCode).toBe(409);
    expect(refused.body.error).toMatchObject({
      code: 'CLAIM_HELD',
      details: { holder: a.holder, leaseExpiresAt: held.body.leaseExpiresAt },
    });
  });

  it('renews the live claim (capped by maxLeaseSeconds), releases it, and frees the key at once', async () => {
    const claimKey = freshKey();
    const got = await acquire(claimKey, a);
    server.clock.advance(10_000);
    const renewed = await renew(got.body.id, got.body.token, 120);
    expect(renewed.statusCode).toBe(200);
    expect(renewed.body).toMatchObject({ id: got.body.id, state: 'HELD', fencingToken: 1, leaseExpiresAt: iso(server.clock.now() + 120_000) });
    expect(renewed.body.token).toBeUndefined();

    expect((await server.api('PUT', '/limits', { body: { maxLeaseSeconds: 40 } })).statusCode).toBe(200);
    try {
      const capped = await renew(got.body.id, got.body.token, 600);
      expect(capped.body.leaseExpiresAt).toBe(iso(server.clock.now() + 40_000));
      const short = await acquire(freshKey(), b, { leaseSeconds: 600 });
      expect(short.body.leaseExpiresAt).toBe(iso(server.clock.now() + 40_000));
    } finally {
      await server.api('PUT', '/limits', { body: { maxLeaseSeconds: 600 } });
    }

    const released = await release(got.body.id, got.body.token);
    expect(released.statusCode).toBe(200);
    expect(released.body).toMatchObject({ state: 'RELEASED', endedAt: iso(server.clock.now()) });
    const next = await acquire(claimKey, b);
    expect(next.statusCode).toBe(201);
    expect(next.body.fencingToken).toBe(2);

    const events = await claimEvents(got.body.id, (e) => e.some((x) => x.type === 'claim.released'));
    expect(events.map((e) => e.type)).toEqual(['claim.acquired', 'claim.renewed', 'claim.renewed', 'claim.released']);
    expect(events[3].data).toEqual({ claimKey, holder: a.holder, fencingToken: 1 });
  });

  it('answers 409 LEASE_LOST to a stale token: released, wrong, or of a lease that ran out', async () => {
    const claimKey = freshKey();
    const got = await acquire(claimKey, a);
    expect((await renew(got.body.id, 'not-the-token')).body.error.code).toBe('LEASE_LOST');
    expect((await release(got.body.id, got.body.token)).statusCode).toBe(200);
    for (const res of [await release(got.body.id, got.body.token), await renew(got.body.id, got.body.token)]) {
      expect(res.statusCode).toBe(409);
      expect(res.body.error.code).toBe('LEASE_LOST');
    }

    const second = await acquire(claimKey, a, { leaseSeconds: 5 });
    server.clock.advance(5_000); // the lease ran out; the sweep has not run
    expect((await renew(second.body.id, second.body.token)).body.error.code).toBe('LEASE_LOST');
    expect((await release(second.body.id, second.body.token)).body.error.code).toBe('LEASE_LOST');
    expect((await server.api('POST', `/claims/00000000-0000-4000-8000-000000000000/renew`, { body: { token: 'x' } })).statusCode).toBe(404);
  });

  it('says why a token is not the live claim: the claim ended, its lease ran out, or the token is another; and names a claim that does not exist', async () => {
    const claimKey = freshKey();
    const got = await acquire(claimKey, a, { leaseSeconds: 5 });
    const because = async (res: Promise<{ body: any }>) => (await res).body.error.message as string;
    const live = `this token is not the live claim ${got.body.id} of claimKey ${claimKey}: `;
    expect(await because(renew(got.body.id, 'not-the-token'))).toBe(`${live}the token is not this claim's`);
    server.clock.advance(5_000);
    expect(await because(renew(got.body.id, got.body.token))).toBe(`${live}its lease ran out`);
    await sweep(0);
    expect(await because(release(got.body.id, got.body.token))).toBe(`${live}the claim is EXPIRED`);
    const missing = await server.api('POST', `/claims/00000000-0000-4000-8000-000000000000/release`, { body: { token: 'x' } });
    expect(missing.body.error).toMatchObject({ code: 'NOT_FOUND', message: 'claim not found' });
    expect((await server.api('GET', `/claims/00000000-0000-4000-8000-000000000000`)).body.error).toMatchObject({ code: 'NOT_FOUND', message: 'claim not found' });
  });

  it('journals each renewal with the new lease end', async () => {
    const got = await acquire(freshKey(), a);
    await renew(got.body.id, got.body.token, 90);
    const events = await claimEvents(got.body.id, (e) => e.some((x) => x.type === 'claim.renewed'));
    expect(events.find((e) => e.type === 'claim.renewed').data).toMatchObject({ leaseExpiresAt: iso(server.clock.now() + 90_000) });
  });

  it('expires a lease that runs out through the sweep: EXPIRED, claim.expired, the key free with the next fencing token', async () => {
    const claimKey = freshKey();
    const got = await acquire(claimKey, a, { leaseSeconds: 5 });
    await sweep(4_999);
    expect((await server.api('GET', `/claims/${got.body.id}`)).body.state).toBe('HELD');
    await sweep(1);
    const view = await server.api('GET', `/claims/${got.body.id}`);
    expect(view.body).toMatchObject({ state: 'EXPIRED', endedAt: iso(server.clock.now()), leaseExpiresAt: got.body.leaseExpiresAt });
    const events = await claimEvents(got.body.id, (e) => e.some((x) => x.type === 'claim.expired'));
    expect(events.at(-1)).toMatchObject({ type: 'claim.expired', data: { claimKey, holder: a.holder, fencingToken: 1, leaseExpiresAt: got.body.leaseExpiresAt, replacedBy: null } });

    const next = await acquire(claimKey, a);
    expect(next.statusCode).toBe(201);
    expect(next.body.fencingToken).toBe(2);
    expect(next.body.id).not.toBe(got.body.id);
    expect(next.body.token).not.toBe(got.body.token);
  });

  it('treats a lease that ran out but was not swept as free; the sweep then emits no second claim.expired', async () => {
    const claimKey = freshKey();
    const old = await acquire(claimKey, a, { leaseSeconds: 5 });
    server.clock.advance(5_000);
    const taken = await acquire(claimKey, b);
    expect(taken.statusCode).toBe(201);
    expect(taken.body.fencingToken).toBe(2);
    expect((await server.api('GET', `/claims/${old.body.id}`)).body).toMatchObject({ state: 'EXPIRED', endedAt: iso(server.clock.now()) });

    await sweep(60_000); // the new claim's lease (30 s) runs out too: it is swept, the old one is not again
    const oldEvents = await claimEvents(old.body.id, (e) => e.some((x) => x.type === 'claim.expired'));
    expect(oldEvents.map((e) => e.type)).toEqual(['claim.acquired', 'claim.expired']);
    expect(oldEvents[1].data.replacedBy).toBe(taken.body.id);
    const newEvents = await claimEvents(taken.body.id, (e) => e.some((x) => x.type === 'claim.expired'));
    expect(newEvents.map((e) => [e.type, e.data.replacedBy])).toEqual([['claim.acquired', undefined], ['claim.expired', null]]);
    // The journal holds the old claim's expiry before the new claim's acquisition.
    const all = await allEvents(server, () => true);
    const position = (id: string, type: string) => all.findIndex((e) => e.aggregate.id === id && e.type === type);
    expect(position(old.body.id, 'claim.expired')).toBeLessThan(position(taken.body.id, 'claim.acquired'));

    // The same holder and session whose lease ran out get a new claim, not the old one.
    const mine = await acquire(claimKey, b, { leaseSeconds: 5 });
    expect(mine.statusCode).toBe(201);
    server.clock.advance(5_000);
    const again = await acquire(claimKey, b);
    expect(again.statusCode).toBe(201);
    expect(again.body.fencingToken).toBe(mine.body.fencingToken + 1);
  });

  it("a run's cancel ends a claim whose lease ends that very millisecond as EXPIRED, one a millisecond short of it as RELEASED", async () => {
    const runScope = (await server.api('POST', '/runs', { body: {}, idem: idem() })).body.scopeId as string;
    const ending = await acquire(freshKey(), a, { scopeId: runScope, leaseSeconds: 5 });
    server.clock.advance(1);
    const lasting = await acquire(freshKey(), a, { scopeId: runScope, leaseSeconds: 5 });
    server.clock.advance(4_999); // the first lease ends now; the second a millisecond later
    expect((await server.api('POST', `/runs/${runScope}/cancel`, { idem: idem() })).statusCode).toBe(200);
    expect((await server.api('GET', `/claims/${ending.body.id}`)).body).toMatchObject({ state: 'EXPIRED', endedAt: iso(server.clock.now()) });
    expect((await server.api('GET', `/claims/${lasting.body.id}`)).body).toMatchObject({ state: 'RELEASED', endedAt: iso(server.clock.now()) });
    const ended = await claimEvents(ending.body.id, (e) => e.length === 2);
    expect(ended.map((e) => [e.type, e.data.replacedBy])).toEqual([['claim.acquired', undefined], ['claim.expired', null]]);
    const released = await claimEvents(lasting.body.id, (e) => e.length === 2);
    expect(released.map((e) => [e.type, e.data.reason])).toEqual([['claim.acquired', undefined], ['claim.released', 'RUN_CANCELLED']]);
  });

  it('grows the fencing token by one with every new claim of a key, across release and expiry, and per key', async () => {
    const claimKey = freshKey();
    const seen: number[] = [];
    for (let i = 0; i < 6; i++) {
      const got = await acquire(claimKey, i % 2 ? a : b, { leaseSeconds: 5 });
      expect(got.statusCode).toBe(201);
      seen.push(got.body.fencingToken);
      if (i % 3 === 0) await release(got.body.id, got.body.token);
      else if (i % 3 === 1) await sweep(5_000);
      else server.clock.advance(5_000);
    }
    expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
    expect((await acquire(freshKey(), a)).body.fencingToken).toBe(1);
  });

  it('lists claims by key, scope and state, pages them, and never shows tokens', async () => {
    const claimKey = freshKey();
    const first = await acquire(claimKey, a);
    await release(first.body.id, first.body.token);
    server.clock.advance(1); // lists order by (createdAt, id): a later createdAt, not the ids' chance order
    const second = await acquire(claimKey, b);
    const byKey = await server.api('GET', `/claims?claimKey=${encodeURIComponent(claimKey)}`);
    expect(byKey.statusCode).toBe(200);
    expect(byKey.body.items.map((c: any) => [c.id, c.state, c.fencingToken])).toEqual([
      [first.body.id, 'RELEASED', 1],
      [second.body.id, 'HELD', 2],
    ]);
    expect(JSON.stringify(byKey.body)).not.toContain(first.body.token);
    const held = await server.api('GET', `/claims?claimKey=${encodeURIComponent(claimKey)}&state=HELD`);
    expect(held.body.items.map((c: any) => c.id)).toEqual([second.body.id]);
    const page = await server.api('GET', `/claims?claimKey=${encodeURIComponent(claimKey)}&limit=1`);
    expect(page.body.items.map((c: any) => c.id)).toEqual([first.body.id]);
    const rest = await server.api('GET', `/claims?claimKey=${encodeURIComponent(claimKey)}&limit=1&cursor=${page.body.nextCursor}`);
    expect(rest.body).toEqual({ items: [expect.objectContaining({ id: second.body.id })], nextCursor: null });
    expect((await server.api('GET', `/claims?scopeId=${scopeId}&state=RELEASED`)).body.items.map((c: any) => c.id)).toContain(first.body.id);
    expect((await server.api('GET', '/claims?state=LOCKED')).statusCode).toBe(400);
  });

  it('validates bodies and needs the Idempotency-Key, coordination_write to claim and coordination_read to read', async () => {
    for (const body of [{ claimKey: '', scopeId, ...a }, { claimKey: 'x'.repeat(513), scopeId, ...a }, { claimKey: 'k', scopeId, ...a, leaseSeconds: 4 }, { claimKey: 'k', scopeId, ...a, leaseSeconds: 601 }, { claimKey: 'k', scopeId: 'nope', ...a }, { claimKey: 'k', scopeId, holder: 'h' }]) {
      const res = await server.api('POST', '/claims', { body, idem: idem() });
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
    }
    expect((await acquire('x'.repeat(512), a)).statusCode).toBe(201);
    const noKey = await server.api('POST', '/claims', { body: { claimKey: freshKey(), scopeId, ...a } });
    expect(noKey.body.error.code).toBe('IDEMPOTENCY_KEY_REQUIRED');

    const reader = await server.newKey({ permissions: ['coordination_read'] });
    expect((await server.api('POST', '/claims', { body: { claimKey: freshKey(), scopeId, ...a }, idem: idem(), key: reader })).statusCode).toBe(403);
    expect((await server.api('GET', '/claims', { key: reader })).statusCode).toBe(200);
    const writer = await server.newKey({ permissions: ['coordination_write'] });
    expect((await server.api('GET', '/claims', { key: writer })).statusCode).toBe(403);
    expect((await server.api('GET', '/claims/00000000-0000-4000-8000-000000000000')).statusCode).toBe(404);
  });

  it('starts from the manual clock', () => {
    expect(server.clock.now()).toBeGreaterThanOrEqual(startMs);
  });
});
