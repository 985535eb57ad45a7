import { randomUUID } from 'node:crypto';
import { MemoryStore } from '@baton/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DrainController } from '@baton-coordination/server/http/deps';
import { ContractChecker } from '../support/contract-checker';
import { bodies, caller, createTenant, populate, SecretBook, type Call, type Fixture } from '../support/isolation-fixture';
import { pathSlots } from '../support/isolation-routes';
import { adminToken, startTestServer, type TestServer } from '../support/server';

/**
 * The server answers what its OpenAPI document says: every operation is called the ways a client
 * gets it wrong and right (valid, no key, a key without the permission, an unknown id, a bad body,
 * no Idempotency-Key, a reused key, an oversized body, the rate limit, a drain), and every reply is
 * held to the document by ContractChecker: a status the operation does not declare, a body off its
 * schema, or an error code the status does not list fails the test.
 */

type Json = Record<string, any>;
const spacePrefix = '/v1/spaces/{spaceId}';

describe('replies against the OpenAPI document', () => {
  let server: TestServer;
  let checker: ContractChecker;
  let call: Call;
  let fixture: Fixture;
  let key: string;
  let readOnlyKey: string;
  let writeOnlyKey: string;
  let operations: Array<{ method: string; path: string; op: Json }>;
  let doc: Json;
  let checked: TestServer;
  let orgId: string;

  beforeAll(async () => {
    // A sealing key, so destinations can be made; deliveries to hooks.example.com fail quietly.
    server = await startTestServer(new MemoryStore(), { webhooks: { secretKey: Buffer.alloc(32, 7), timeoutMs: 500 } });
    doc = (await server.inject('GET', '/v1/openapi.json', {})).body;
    checker = new ContractChecker(doc);
    checked = checker.checked(server);
    call = caller(checked);
    const tenant = await createTenant(checked, 'contract', 1, new SecretBook());
    key = tenant.key;
    orgId = tenant.orgId;
    readOnlyKey = await tenant.keyWith(['coordination_read']);
    writeOnlyKey = await tenant.keyWith(['coordination_write']);
    fixture = await populate(call, key, tenant.spaceIds[0]!, 'contract', new SecretBook());
    operations = Object.entries<Json>(doc.paths)
      .filter(([path]) => path.startsWith(spacePrefix))
      .flatMap(([path, item]) => Object.entries<Json>(item).map(([method, op]) => ({ method: method.toUpperCase(), path: path.slice(spacePrefix.length), op })));
  });
  afterAll(async () => server?.close());

  /** Every operator operation with real ids in its path and its request example as the body. */
  const adminCalls = async (): Promise<Array<{ method: string; url: string; example: unknown }>> => {
    const keyId = (await server.admin('POST', `/orgs/${orgId}/keys`, { name: 'to-revoke' })).body.id as string;
    return Object.entries<Json>(doc.paths)
      .filter(([path]) => path.startsWith('/admin/'))
      .flatMap(([path, item]) =>
        Object.entries<Json>(item).map(([method, op]) => ({
          method: method.toUpperCase(),
          url: path.replace('{orgId}', orgId).replace('{keyId}', keyId),
          example: op.requestBody?.content['application/json'].example,
        })),
      );
  };

  /** The route's path with the fixture's ids, or `unknown` in every id slot. */
  const urlOf = (path: string, ids: 'fixture' | 'unknown'): string =>
    pathSlots(path.replace(/\{(\w+)\}/g, ':$1')).reduce((url, slot) => url.replace(`{${slot.param}}`, ids === 'unknown' || !slot.kind ? randomUUID() : fixture.ids[slot.kind]), path);
  const bodyOf = (method: string, path: string): unknown => bodies[`${method} ${path.replace(/\{(\w+)\}/g, ':$1')}`]?.body({ own: fixture, from: () => fixture, fresh: randomUUID() });

  it('the check is not vacuous: an undeclared status, a body off its schema, a body on a 204 and an unlisted code fail', () => {
    const probe = new ContractChecker(checker.doc);
    const url = `/v1/spaces/${fixture.spaceId}/tasks/admit`;
    const headers = { 'x-request-id': 'probe' };
    expect(probe.check('POST', url, { statusCode: 418, headers, body: undefined })).toEqual([expect.stringMatching(/status not declared/)]);
    expect(probe.check('POST', url, { statusCode: 200, headers, body: { token: 7 } })).toEqual([expect.stringMatching(/does not match the schema/)]);
    expect(probe.check('POST', url, { statusCode: 204, headers, body: { token: 'x' } })).toEqual([expect.stringMatching(/a body where the document declares none/)]);
    const quota = { error: { code: 'QUOTA_EXHAUSTED', message: 'm', requestId: 'r' } };
    expect(probe.check('POST', url, { statusCode: 429, headers: { ...headers, 'retry-after': '2' }, body: quota })).toEqual([expect.stringMatching(/QUOTA_EXHAUSTED is not among/)]);
    expect(probe.check('POST', url, { statusCode: 503, headers, body: { error: { code: 'UNAVAILABLE', message: 'm', requestId: 'r' } } })).toEqual([expect.stringMatching(/Retry-After/)]);
  });

  it('declares what every operation answers to valid calls, missing keys, missing permissions, unknown ids and bad input', async () => {
    for (const { method, path } of operations) {
      const body = bodyOf(method, path);
      await call(method, fixture.spaceId, urlOf(path, 'fixture'), { key, body });
      await call(method, fixture.spaceId, urlOf(path, 'fixture'), { key: null, body });
      await call(method, fixture.spaceId, urlOf(path, 'fixture'), { key: method === 'GET' ? writeOnlyKey : readOnlyKey, body });
      if (path.includes('{')) await call(method, fixture.spaceId, urlOf(path, 'unknown'), { key, body });
      if (method === 'GET') await call(method, fixture.spaceId, `${urlOf(path, 'fixture')}?limit=0&waitMs=-1`, { key });
      else await call(method, fixture.spaceId, urlOf(path, 'fixture'), { key, body: { scopeId: 'not-a-uuid', token: 7, name: '', items: 'x', tasks: [], messages: {} } });
    }
    expect(checker.problems).toEqual([]);
    const seen = new Set(checker.seen.map((s) => s.operation));
    expect(operations.filter((o) => !seen.has(`${o.method} ${spacePrefix}${o.path}`)).map((o) => `${o.method} ${o.path}`)).toEqual([]);
    // Most valid calls succeed (some, like accepting a task that has no result, are 409 by design).
    const succeeded = new Set(checker.seen.filter((s) => s.status < 300).map((s) => s.operation));
    expect(succeeded.size / operations.length).toBeGreaterThan(0.8);
    for (const status of [200, 201, 400, 401, 403, 404, 409]) expect(checker.seen.some((s) => s.status === status), String(status)).toBe(true);
  });

  it('requires Idempotency-Key exactly where the document says it is required', async () => {
    const writes = operations.filter((o) => o.method !== 'GET');
    const mismatches: string[] = [];
    for (const { method, path, op } of writes) {
      const header = (op.parameters ?? []).find((p: Json) => p.in === 'header' && p.name === 'Idempotency-Key');
      expect(header, `${method} ${path} declares Idempotency-Key`).toBeDefined();
      const headers: Record<string, string> = { authorization: `Bearer ${key}` };
      const reply = await checker.checked(server).inject(method, `/v1/spaces/${fixture.spaceId}${urlOf(path, 'fixture')}`, headers, bodyOf(method, path));
      const refused = reply.body?.error?.code === 'IDEMPOTENCY_KEY_REQUIRED';
      if (refused !== header.required) mismatches.push(`${method} ${path}: declared required ${String(header.required)}, answered ${reply.statusCode} ${reply.body?.error?.code ?? ''}`);
    }
    expect(mismatches).toEqual([]);
    expect(writes.filter((o) => o.op.parameters.some((p: Json) => p.name === 'Idempotency-Key' && p.required)).length).toBeGreaterThan(15);
    expect(checker.problems).toEqual([]);
  });

  it('declares 422 for a reused Idempotency-Key and 413 for a body over 1 MiB on every write', async () => {
    for (const { method, path } of operations.filter((o) => o.method !== 'GET')) {
      const idem = `reuse-${randomUUID()}`;
      await call(method, fixture.spaceId, urlOf(path, 'fixture'), { key, body: bodyOf(method, path), idem });
      await call(method, fixture.spaceId, urlOf(path, 'fixture'), { key, body: { other: 'body' }, idem });
    }
    const huge = { scopeId: fixture.scopeId, payload: 'x'.repeat(1_100_000) };
    const reply = await call('POST', fixture.spaceId, `/mailboxes/${fixture.ids.mailbox}/messages`, { key, body: huge });
    expect(reply.statusCode).toBe(413);
    expect(checker.seen.filter((s) => s.status === 422).length).toBeGreaterThan(10);
    expect(checker.problems).toEqual([]);
  });

  it("declares admit's and recv's empty 204, without a body", async () => {
    const empty = (await call('POST', fixture.spaceId, '/mailboxes', { key, body: { name: `empty-${randomUUID()}` } })).body;
    const worker = { scopeId: fixture.scopeId, holder: 'w', holderSession: 's' };
    const replies = [
      await call('POST', fixture.spaceId, '/tasks/admit', { key, body: { ...worker, mailboxId: empty.id } }),
      await call('POST', fixture.spaceId, '/tasks/admit-batch', { key, body: { ...worker, mailboxId: empty.id, maxTasks: 5 } }),
      await call('POST', fixture.spaceId, `/mailboxes/${empty.id}/recv`, { key, body: worker }),
      await call('POST', fixture.spaceId, `/mailboxes/${empty.id}/recv-batch`, { key, body: { ...worker, maxMessages: 5 } }),
    ];
    expect(replies.map((r) => r.statusCode)).toEqual([204, 204, 204, 204]);
    expect(checker.problems).toEqual([]);
  });

  it("accepts every request example of the document (no 400), on the user's routes and the operator's", async () => {
    const refused: string[] = [];
    // The examples go together: consume and wait take units of the allowance createAllowance's example makes (the fixture's has 1).
    const allowanceExample = operations.find((o) => o.op.operationId === 'createAllowance')!.op.requestBody.content['application/json'].example;
    const allowance = (await call('POST', fixture.spaceId, '/allowances', { key, body: allowanceExample })).body;
    for (const { method, path, op } of operations) {
      const example = op.requestBody?.content['application/json'].example;
      if (example === undefined) continue;
      // The long polls' examples wait 20 s; on this manual clock they answer at once instead.
      const body = typeof example === 'object' && example !== null && 'waitMs' in example ? { ...example, waitMs: 0 } : example;
      const url = path.startsWith('/allowances/{id}') ? path.replace('{id}', allowance.id) : urlOf(path, 'fixture');
      const reply = await call(method, fixture.spaceId, url, { key, body });
      if (reply.statusCode === 400) refused.push(`${method} ${path}: ${JSON.stringify(reply.body.error)}`);
    }
    const admin = await adminCalls();
    for (const { method, url, example } of admin) {
      if (example === undefined) continue;
      const reply = await checked.inject(method, url, { authorization: `Bearer ${adminToken}` }, example);
      if (reply.statusCode === 400) refused.push(`${method} ${url}: ${JSON.stringify(reply.body.error)}`);
    }
    expect(refused).toEqual([]);
    expect(checker.problems).toEqual([]);
  });

  it("declares what the operator's routes answer: valid calls, no token, bad input, unknown ids", async () => {
    for (const { method, url, example } of await adminCalls()) {
      await checked.inject(method, url, { authorization: `Bearer ${adminToken}` }, example);
      await checked.inject(method, url, {}, example);
      if (method !== 'GET') await checked.inject(method, url, { authorization: `Bearer ${adminToken}` }, { name: 7, plan: 'GOLD', ms: -1, permissions: [] });
      if (url.includes('/orgs/') || url.includes('/keys/')) await checked.inject(method, url.replace(/[0-9a-f-]{36}/, randomUUID()), { authorization: `Bearer ${adminToken}` }, example);
    }
    const seen = new Set(checker.seen.filter((s) => s.operation.includes(' /admin/')).map((s) => s.operation));
    expect(seen.size).toBe(Object.keys(doc.paths).filter((p) => p.startsWith('/admin/')).reduce((n, p) => n + Object.keys(doc.paths[p]).length, 0));
    expect(checker.problems).toEqual([]);
  });

  it('declares 429 with Retry-After on every operation the rate limit refuses', async () => {
    expect((await call('PUT', fixture.spaceId, '/limits', { key, body: { requestsPerMinute: 10 } })).statusCode).toBe(200);
    for (const { method, path } of operations) await call(method, fixture.spaceId, urlOf(path, 'fixture'), { key, body: bodyOf(method, path) });
    const limited = new Set(checker.seen.filter((s) => s.status === 429).map((s) => s.operation));
    expect(limited.size).toBeGreaterThan(operations.length * 0.8);
    expect(checker.problems).toEqual([]);
  });

  it('declares 503 UNAVAILABLE with Retry-After on every operation, as a draining server answers', async () => {
    // The drain's first step alone: the app is not closed yet, so a call still reaches it (server-drain.test.ts).
    (server.baton.deps.drain as DrainController).start();
    for (const { method, path } of operations) await call(method, fixture.spaceId, urlOf(path, 'fixture'), { key, body: bodyOf(method, path) });
    const unavailable = new Set(checker.seen.filter((s) => s.status === 503 && s.code === 'UNAVAILABLE').map((s) => s.operation));
    expect(unavailable.size).toBe(operations.length);
    expect(checker.problems).toEqual([]);
  });
});
