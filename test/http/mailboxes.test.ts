import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { idem, openTestServer, type TestServer } from '../support/server';

const scopeId = '11111111-1111-4111-8111-111111111111';
const otherScope = '33333333-3333-4333-8333-333333333333';
const unknownId = '22222222-2222-4222-8222-222222222222';

describe.each(storeTargets())('mailboxes over HTTP on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ server, close } = await openTestServer(target));
  });
  afterAll(async () => close());

  let counter = 0;
  const create = async (extra: Record<string, unknown> = {}): Promise<string> => {
    const res = await server.api('POST', '/mailboxes', { body: { name: `box-${++counter}`, ...extra }, idem: idem() });
    expect(res.statusCode).toBe(201);
    return res.body.id;
  };
  const send = (box: string, payload: unknown, extra: Record<string, unknown> = {}) =>
    server.api('POST', `/mailboxes/${box}/messages`, { body: { scopeId, payload, ...extra }, idem: idem() });
  const recv = (box: string, extra: Record<string, unknown> = {}, opts: { idem?: string } = {}) =>
    server.api('POST', `/mailboxes/${box}/recv`, { body: { scopeId, holder: 'worker', holderSession: 's1', ...extra }, ...opts });
  const call = (id: string, verb: 'renew' | 'complete' | 'nack', body: Record<string, unknown>) => server.api('POST', `/messages/${id}/${verb}`, { body });
  const list = async (box: string, query = '') => (await server.api('GET', `/mailboxes/${box}/messages${query}`)).body;
  const advance = (ms: number) => server.admin('POST', '/clock/advance', { ms });

  describe('mailboxes', () => {
    it('creates with defaults (201), repeats an identical create (200), refuses other settings (409)', async () => {
      const res = await server.api('POST', '/mailboxes', { body: { name: 'jobs' }, idem: idem() });
      expect(res.statusCode).toBe(201);
      expect(res.body).toMatchObject({ name: 'jobs', mode: 'WORK', recipientId: null, backlogLimit: 1000 });
      const again = await server.api('POST', '/mailboxes', { body: { name: 'jobs', mode: 'WORK' }, idem: idem() });
      expect(again.statusCode).toBe(200);
      expect(again.body.id).toBe(res.body.id);
      const other = await server.api('POST', '/mailboxes', { body: { name: 'jobs', mode: 'INBOX' }, idem: idem() });
      expect(other.statusCode).toBe(409);
      expect(other.body.error.code).toBe('CONFLICT');
    });

    it.each([
      [{ name: 'x', backlogLimit: 0 }, 'body.backlogLimit'],
      [{ name: 'x', backlogLimit: 100_001 }, 'body.backlogLimit'],
      [{ name: 'x', mode: 'FANOUT' }, 'body.mode'],
      [{}, 'body.name'],
    ])('rejects %j naming %s', async (body, path) => {
      const res = await server.api('POST', '/mailboxes', { body, idem: idem() });
      expect(res.statusCode).toBe(400);
      expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    });

    it('needs an Idempotency-Key; a key without resource_config may only repeat an identical create', async () => {
      expect((await server.api('POST', '/mailboxes', { body: { name: 'no-key' } })).body.error.code).toBe('IDEMPOTENCY_KEY_REQUIRED');
      const worker = await server.newKey({ permissions: ['coordination_read', 'coordination_write'] });
      const res = await server.api('POST', '/mailboxes', { key: worker, body: { name: 'nope' }, idem: idem() });
      expect(res.statusCode).toBe(403);
      expect(res.body.error.message).toBe('credential lacks resource_config');
      expect((await server.api('POST', '/mailboxes', { key: worker, body: { name: 'jobs' }, idem: idem() })).statusCode).toBe(200);
    });

    it('lists by name with paging', async () => {
      await create({ mode: 'INBOX', recipientId: 'agent-7' });
      const first = await server.api('GET', '/mailboxes?limit=1');
      expect(first.body.items).toHaveLength(1);
      const second = await server.api('GET', `/mailboxes?limit=1&cursor=${first.body.nextCursor}`);
      expect(second.body.items[0].name > first.body.items[0].name).toBe(true);
      expect((await server.api('GET', '/mailboxes?cursor=bogus')).statusCode).toBe(400);
    });
  });

  describe('send and list', () => {
    it('sends READY messages (201) and lists them in send order with a state filter and paging', async () => {
      const box = await create();
      const a = await send(box, { n: 1 });
      expect(a.statusCode).toBe(201);
      expect(a.body).toMatchObject({ mailboxId: box, scopeId, state: 'READY', payload: { n: 1 }, attempt: 0, leaseExpiresAt: null });
      await send(box, 'two', { deadline: '2026-02-01T00:00:00Z' });
      await send(box, null);
      expect((await list(box)).items.map((m: { payload: unknown }) => m.payload)).toEqual([{ n: 1 }, 'two', null]);
      const page = await list(box, '?limit=2');
      expect(page.items).toHaveLength(2);
      expect((await list(box, `?cursor=${page.nextCursor}`)).items.map((m: { payload: unknown }) => m.payload)).toEqual([null]);
      await recv(box);
      expect((await list(box, '?state=CLAIMED')).items).toHaveLength(1);
      expect((await list(box, '?state=READY,CLAIMED')).items).toHaveLength(3);
      expect((await server.api('GET', `/mailboxes/${box}/messages?state=DONE`)).statusCode).toBe(400);
      expect((await server.api('GET', `/mailboxes/${unknownId}/messages`)).statusCode).toBe(404);
    });

    it('dedups by workKey: 200 with the committed message; another payload is 409', async () => {
      const box = await create();
      const first = await send(box, { job: 1 }, { workKey: 'w-1' });
      const again = await send(box, { job: 1 }, { workKey: 'w-1' });
      expect(again.statusCode).toBe(200);
      expect(again.body.id).toBe(first.body.id);
      expect((await send(box, { job: 2 }, { workKey: 'w-1' })).statusCode).toBe(409);
      expect((await list(box)).items).toHaveLength(1);
    });

    it('refuses with BACKLOG_FULL at backlogLimit READY plus CLAIMED; finished messages make room', async () => {
      const box = await create({ backlogLimit: 2 });
      await send(box, 1);
      await send(box, 2);
      const full = await send(box, 3);
      expect(full.statusCode).toBe(429);
      expect(full.body.error.code).toBe('BACKLOG_FULL');
      expect(full.headers['retry-after']).toBe('1');
      const d = (await recv(box)).body;
      expect((await send(box, 3)).statusCode).toBe(429); // CLAIMED still counts
      await call(d.messageId, 'complete', { token: d.token });
      expect((await send(box, 3)).statusCode).toBe(201);
    });

    it('payload: required, at most 65,536 bytes of JSON (413), no U+0000 (400); unknown mailbox 404', async () => {
      const box = await create();
      expect((await server.api('POST', `/mailboxes/${box}/messages`, { body: { scopeId }, idem: idem() })).statusCode).toBe(400);
      const big = await send(box, 'x'.repeat(65_536));
      expect(big.statusCode).toBe(413);
      expect(big.body.error.code).toBe('PAYLOAD_TOO_LARGE');
      expect((await send(box, 'x'.repeat(65_534))).statusCode).toBe(201); // 65,536 bytes with its quotes
      expect((await send(box, { s: 'a\u0000b' })).statusCode).toBe(400);
      expect((await send(unknownId, 1)).statusCode).toBe(404);
      const reader = await server.newKey({ permissions: ['coordination_read'] });
      const res = await server.api('POST', `/mailboxes/${box}/messages`, { key: reader, body: { scopeId, payload: 1 }, idem: idem() });
      expect(res.body.error.message).toBe('credential lacks coordination_write');
    });
  });

  it('a complete whose result is too large answers 413 naming result.payload, before the message is looked up', async () => {
    const box = await create();
    await send(box, 'job');
    const d = (await recv(box)).body;
    const tooBig = { token: d.token, result: { payload: 'x'.repeat(65_536) } };
    for (const id of [d.messageId, unknownId]) {
      const res = await call(id, 'complete', tooBig);
      expect(res.statusCode).toBe(413);
      expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
      expect(res.body.error.message).toContain('result.payload');
    }
    expect((await call(d.messageId, 'complete', { token: d.token })).body.state).toBe('ACKED'); // the refusal changed nothing
  });

  describe('recv and leases', () => {
    it('claims FIFO within the scope only, records holder and session, and answers 204 when empty', async () => {
      const box = await create();
      await send(box, 'other', { scopeId: otherScope });
      await send(box, 'first');
      await send(box, 'second');
      const d = await recv(box, { leaseSeconds: 60 });
      expect(d.statusCode).toBe(200);
      expect(d.body).toMatchObject({ payload: 'first', scopeId, attempt: 1, leaseExpiresAt: new Date(server.clock.now() + 60_000).toISOString() });
      expect(typeof d.body.token).toBe('string');
      const claimed = (await list(box, '?state=CLAIMED')).items[0];
      expect(claimed).toMatchObject({ id: d.body.messageId, holder: 'worker', holderSession: 's1' });
      expect(claimed.token).toBeUndefined();
      expect((await recv(box)).body.payload).toBe('second');
      const empty = await recv(box);
      expect(empty.statusCode).toBe(204);
      expect((await recv(box, { scopeId: otherScope })).body.payload).toBe('other');
    });

    it('validates the request and 404s an unknown mailbox', async () => {
      const box = await create();
      expect((await recv(box, { leaseSeconds: 4 })).statusCode).toBe(400);
      expect((await recv(box, { leaseSeconds: 601 })).statusCode).toBe(400);
      expect((await recv(box, { waitMs: 120_001 })).statusCode).toBe(400);
      expect((await recv(box, { holderSession: undefined })).statusCode).toBe(400);
      expect((await recv(unknownId)).statusCode).toBe(404);
    });

    it('an empty recv stores nothing under its Idempotency-Key; a delivery replays', async () => {
      const box = await create();
      const key = idem();
      expect((await recv(box, {}, { idem: key })).statusCode).toBe(204);
      await send(box, 'late');
      const got = await recv(box, {}, { idem: key });
      expect(got.statusCode).toBe(200);
      const replay = await recv(box, {}, { idem: key });
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body.token).toBe(got.body.token);
    });

    it('a long-polling recv is woken by a send', async () => {
      const box = await create();
      const pending = recv(box, { waitMs: 20_000 });
      await new Promise((r) => setTimeout(r, 50));
      await send(box, 'wake');
      const res = await pending;
      expect(res.statusCode).toBe(200);
      expect(res.body.payload).toBe('wake');
    });

    it('a long-polling recv answers 204 when its wait ends', async () => {
      const box = await create();
      const pending = recv(box, { waitMs: 20_000 });
      await new Promise((r) => setTimeout(r, 50));
      server.clock.advance(20_000);
      expect((await pending).statusCode).toBe(204);
    });

    it('renew extends the lease; complete ACKs; every old token is then LEASE_LOST', async () => {
      const box = await create();
      await send(box, 'job');
      const d = (await recv(box)).body;
      const renewed = await call(d.messageId, 'renew', { token: d.token, leaseSeconds: 120 });
      expect(renewed.statusCode).toBe(200);
      expect(renewed.body.leaseExpiresAt).toBe(new Date(server.clock.now() + 120_000).toISOString());
      expect((await call(d.messageId, 'renew', { token: 'not-the-token' })).body.error.code).toBe('LEASE_LOST');
      const done = await call(d.messageId, 'complete', { token: d.token });
      expect(done.statusCode).toBe(200);
      expect(done.body).toEqual({ state: 'ACKED', resultMessageId: null });
      for (const verb of ['renew', 'complete', 'nack'] as const) {
        const res = await call(d.messageId, verb, { token: d.token, retry: true });
        expect(res.statusCode).toBe(409);
        expect(res.body.error.code).toBe('LEASE_LOST');
      }
      expect((await call(unknownId, 'complete', { token: d.token })).statusCode).toBe(404);
      expect((await call(d.messageId, 'nack', { token: d.token })).statusCode).toBe(400); // retry is required
    });

    it('complete with mailboxId and scopeId also sends the result there; one without the other is 400', async () => {
      const box = await create();
      const results = await create();
      await send(box, 'job');
      const d = (await recv(box)).body;
      expect((await call(d.messageId, 'complete', { token: d.token, result: { mailboxId: results } })).statusCode).toBe(400);
      const done = await call(d.messageId, 'complete', { token: d.token, result: { mailboxId: results, scopeId: otherScope, payload: { ok: true } } });
      expect(done.statusCode).toBe(200);
      const [published] = (await list(results)).items;
      expect(published).toMatchObject({ id: done.body.resultMessageId, scopeId: otherScope, payload: { ok: true }, state: 'READY' });
    });

    it('nack with retry makes it READY again (a new claim counts an attempt); without retry DEAD', async () => {
      const box = await create();
      await send(box, 'job');
      const first = (await recv(box)).body;
      expect((await call(first.messageId, 'nack', { token: first.token, retry: true })).body).toEqual({ state: 'READY' });
      const second = (await recv(box)).body;
      expect(second).toMatchObject({ messageId: first.messageId, attempt: 2 });
      expect((await call(first.messageId, 'complete', { token: first.token })).body.error.code).toBe('LEASE_LOST');
      expect((await call(second.messageId, 'nack', { token: second.token, retry: false })).body).toEqual({ state: 'DEAD' });
      expect((await list(box)).items[0].state).toBe('DEAD');
    });

    it('the 5th failed attempt is DEAD', async () => {
      const box = await create();
      await send(box, 'flaky');
      for (let attempt = 1; attempt <= 5; attempt++) {
        const d = (await recv(box)).body;
        expect(d.attempt).toBe(attempt);
        const res = await call(d.messageId, 'nack', { token: d.token, retry: true });
        expect(res.body.state).toBe(attempt < 5 ? 'READY' : 'DEAD');
      }
      expect((await recv(box)).statusCode).toBe(204);
    });

    it('lease expiry on the clock returns the message to READY, its token LEASE_LOST; after 5 it is DEAD', async () => {
      const box = await create();
      await send(box, 'slow');
      const d = (await recv(box, { leaseSeconds: 30 })).body;
      await advance(29_000);
      expect((await list(box)).items[0].state).toBe('CLAIMED');
      await advance(1_000);
      expect((await list(box)).items[0]).toMatchObject({ state: 'READY', leaseExpiresAt: null, attempt: 1 });
      expect((await call(d.messageId, 'complete', { token: d.token })).body.error.code).toBe('LEASE_LOST');
      for (let attempt = 2; attempt <= 5; attempt++) {
        expect((await recv(box, { leaseSeconds: 5 })).body.attempt).toBe(attempt);
        await advance(5_000);
      }
      expect((await list(box)).items[0].state).toBe('DEAD');
      // On PostgreSQL the journal shows an event once no older transaction is still open anywhere, so poll briefly.
      let types: string[] = [];
      for (let i = 0; i < 50 && types.at(-1) !== 'message.dead'; i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 50));
        const events = (await server.api('GET', '/events?limit=500')).body.items.filter((e: { data: { messageId?: string } }) => e.data.messageId === d.messageId);
        types = events.map((e: { type: string }) => e.type);
      }
      expect(types.slice(-2)).toEqual(['message.lease_expired', 'message.dead']);
    });

    it('a long-polling recv is woken by a lease expiry', async () => {
      const box = await create();
      await send(box, 'retry-me');
      await recv(box, { leaseSeconds: 5 });
      const pending = recv(box, { waitMs: 20_000, holderSession: 's2' });
      await new Promise((r) => setTimeout(r, 50));
      await advance(5_000);
      const res = await pending;
      expect(res.statusCode).toBe(200);
      expect(res.body).toMatchObject({ payload: 'retry-me', attempt: 2 });
    });
  });
  it('concurrent sends near backlogLimit never pass it: they lock the mailbox and count again', async () => {
    const box = await create({ backlogLimit: 3 });
    const replies = await Promise.all(Array.from({ length: 12 }, (_, n) => send(box, { n })));
    expect(replies.filter((r) => r.statusCode === 201)).toHaveLength(3);
    expect(replies.filter((r) => r.statusCode === 429).every((r) => r.body.error.code === 'BACKLOG_FULL')).toBe(true);
    expect((await list(box, '?state=READY')).items).toHaveLength(3);
  });

  describe('INBOX mode', () => {
    it('an INBOX with a recipientId serves only that holder (recv and admit); anyone may send to it', async () => {
      const inbox = await create({ mode: 'INBOX', recipientId: 'agent-7' });
      expect((await send(inbox, 'for agent-7')).statusCode).toBe(201);
      const stranger = await recv(inbox, { holder: 'agent-8' });
      expect(stranger.statusCode).toBe(403);
      expect(stranger.body.error).toMatchObject({ code: 'FORBIDDEN' });
      expect(stranger.body.error.message).toContain('agent-7');
      const owner = await recv(inbox, { holder: 'agent-7' });
      expect(owner.statusCode).toBe(200);
      expect(owner.body).toMatchObject({ payload: 'for agent-7', claimed: { pools: [], quotas: [], budgets: [], workLimit: null } });
      await server.api('POST', '/tasks', { body: { scopeId, mailboxId: inbox, taskKey: `inbox-task-${counter}` }, idem: idem() });
      const admitBody = (holder: string) => ({ body: { scopeId, mailboxId: inbox, holder, holderSession: 's' }, idem: idem() });
      expect((await server.api('POST', '/tasks/admit', admitBody('agent-8'))).statusCode).toBe(403);
      expect((await server.api('POST', '/tasks/admit', admitBody('agent-7'))).statusCode).toBe(200);
    });

    it('a WORK mailbox, or an INBOX without recipientId, serves any holder', async () => {
      for (const settings of [{ mode: 'WORK', recipientId: 'agent-7' }, { mode: 'INBOX' }]) {
        const box = await create(settings);
        await send(box, 'anyone');
        expect((await recv(box, { holder: 'agent-8' })).statusCode).toBe(200);
      }
    });
  });
});
