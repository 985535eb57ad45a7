import { MemoryStore } from '@baton/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idem, startTestServer, type TestServer } from '../support/server';

/**
 * Regressions found by the route fuzzer (test/http/fuzz-routes.test.ts): requests the router,
 * the JSON parser or the rate limits used to answer outside the contract.
 */
describe('request edges found by fuzzing', () => {
  let server: TestServer;
  let box: string;
  const scopeId = '11111111-1111-4111-8111-111111111111';

  beforeAll(async () => {
    server = await startTestServer(new MemoryStore());
    box = (await server.api('POST', '/mailboxes', { body: { name: 'edges' }, idem: idem() })).body.id;
  });
  afterAll(async () => server.close());

  const raw = (method: 'GET' | 'POST', path: string, payload?: string) =>
    server.baton.app.inject({
      method,
      url: `/v1/spaces/${server.spaceId}${path}`,
      headers: { authorization: `Bearer ${server.key}`, 'idempotency-key': idem(), 'content-type': 'application/json' },
      ...(payload === undefined ? {} : { payload }),
    });

  it.each([
    ['a path parameter over 100 characters', `/tasks/${'a'.repeat(101)}`],
    ['a path segment that does not percent-decode', '/tasks/%E0%A4%A'],
  ])('answers %s with the 400 envelope and X-Request-Id (was Fastify’s own 414/400 body)', async (_what, path) => {
    const res = await raw('GET', path);
    expect(res.statusCode).toBe(400);
    const body = JSON.parse(res.body);
    expect(body.error).toMatchObject({ code: 'VALIDATION_FAILED', requestId: res.headers['x-request-id'] });
    expect(res.headers['x-request-id']).toBeTruthy();
  });

  it('refuses a body nested 10,000 levels deep with 400 (was a stack overflow: 500)', async () => {
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    for (const [path, body] of [
      ['/tasks', `{"scopeId":"${scopeId}","mailboxId":"${box}","taskKey":"deep","input":${deep}}`],
      [`/mailboxes/${box}/messages`, `{"scopeId":"${scopeId}","payload":${deep}}`],
    ] as const) {
      const res = await raw('POST', path, body);
      expect(res.statusCode, res.body).toBe(400);
      expect(JSON.parse(res.body).error).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: 'body' }] });
    }
    // Ordinary nesting still passes.
    const fine = await raw('POST', `/mailboxes/${box}/messages`, `{"scopeId":"${scopeId}","payload":${'['.repeat(100)}${']'.repeat(100)}}`);
    expect(fine.statusCode, fine.body).toBe(201);
  });

  it('refuses a body that is not UTF-8 with 400 (was read as U+FFFD: two different taskKeys became one task)', async () => {
    const submit = (taskKey: Buffer) =>
      server.baton.app.inject({
        method: 'POST',
        url: `/v1/spaces/${server.spaceId}/tasks`,
        headers: { authorization: `Bearer ${server.key}`, 'idempotency-key': idem(), 'content-type': 'application/json' },
        payload: Buffer.concat([Buffer.from(`{"scopeId":"${scopeId}","mailboxId":"${box}","input":{},"taskKey":"`), taskKey, Buffer.from('"}')]),
      });
    for (const bytes of [[0x75, 0x2d, 0xff], [0x75, 0x2d, 0xfe], [0xc3], [0xed, 0xa0, 0x80]]) {
      const res = await submit(Buffer.from(bytes));
      expect(res.statusCode, res.body).toBe(400);
      expect(JSON.parse(res.body).error).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: 'body', message: 'is not valid UTF-8' }] });
    }
    // UTF-8 beyond ASCII passes, and two keys stay two tasks.
    for (const taskKey of ['u-é', 'u-ü']) {
      const res = await submit(Buffer.from(taskKey, 'utf8'));
      expect(res.statusCode, res.body).toBe(201);
      expect(JSON.parse(res.body)).toMatchObject({ created: true });
    }
  });

  it('keeps PUT /limits reachable after requestsPerMinute 1 (80 % of 1 rounded to 0 locked the space)', async () => {
    expect((await server.api('PUT', '/limits', { body: { requestsPerMinute: 1 }, idem: idem() })).statusCode).toBe(200);
    server.clock.advance(60_000);
    const raised = await server.api('PUT', '/limits', { body: { requestsPerMinute: 1_000 }, idem: idem() });
    expect(raised.statusCode, JSON.stringify(raised.body)).toBe(200);
    expect(raised.body.requestsPerMinute).toBe(1_000);
  });
});
