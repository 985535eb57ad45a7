import { describe, expect, it } from 'vitest';
import { SteppingClock } from './testing/stepping-clock';
import { createClient, type ClientOptions } from './client';
import type { WorkerApi } from './contract';
import { BatonApiError, isRetryable, isTransportFailure } from './errors';
import type { RuntimeClock } from './clock';
import type { Transport, TransportRequest, TransportResponse } from './transport';


/** 'hang' waits for the abort as fetch does; 'deaf' never settles, ignoring its signal. */
type Scripted = TransportResponse | Error | 'hang' | 'deaf';

function scriptedTransport(script: Scripted[]): { transport: Transport; requests: TransportRequest[] } {
  const requests: TransportRequest[] = [];
  const transport: Transport = async (request) => {
    requests.push(request);
    const next = script.shift();
    if (next === undefined) throw new Error('script ran out');
    if (next === 'deaf') return new Promise<never>(() => undefined);
    if (next === 'hang') {
      return new Promise<never>((_, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true }));
    }
    if (next instanceof Error) throw next;
    return next;
  };
  return { transport, requests };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}): TransportResponse => ({
  status,
  headers: { 'content-type': 'application/json', 'x-request-id': `req-${status}`, ...headers },
  body: body === undefined ? '' : JSON.stringify(body),
});
const envelope = (status: number, code: string, headers: Record<string, string> = {}, details?: unknown): TransportResponse =>
  json(status, { error: { code, message: `${code} happened`, requestId: `req-${code}`, ...(details === undefined ? {} : { details }) } }, headers);

const spaceId = '11111111-1111-4111-8111-111111111111';
const budgetId = '22222222-2222-4222-8222-222222222222';
const scopeId = '33333333-3333-4333-8333-333333333333';
const mailboxId = '44444444-4444-4444-8444-444444444444';
const reserveBody = { scopeId, holder: 'worker-1', amountMinor: '100' };

function setup(script: Scripted[], options: Partial<ClientOptions> = {}) {
  const clock = new SteppingClock();
  const { transport, requests } = scriptedTransport(script);
  let keys = 0;
  const client = createClient({
    baseUrl: 'http://baton.test/',
    apiKey: 'bk_test',
    spaceId,
    transport,
    clock,
    random: { next: () => 0 },
    timeoutMs: 1_000,
    newIdempotencyKey: () => `key-${++keys}`,
    ...options,
  });
  return { client, clock, requests };
}

async function failure(promise: Promise<unknown>): Promise<BatonApiError> {
  const error = await promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BatonApiError);
  return error as BatonApiError;
}

describe('requests', () => {
  it('sends bearer auth, JSON and an Idempotency-Key on a POST', async () => {
    const { client, requests } = setup([json(201, { id: 'r1' })]);
    expect(await client.reserve(budgetId, reserveBody)).toEqual({ id: 'r1' });
    const [request] = requests;
    expect(request!.method).toBe('POST');
    expect(request!.url).toBe(`http://baton.test/v1/spaces/${spaceId}/budgets/${budgetId}/reserve`);
    expect(request!.headers).toMatchObject({ authorization: 'Bearer bk_test', 'content-type': 'application/json', 'idempotency-key': 'key-1' });
    expect(JSON.parse(request!.body!)).toEqual(reserveBody);
  });

  it('uses the caller\'s Idempotency-Key, and a fresh one per logical call otherwise', async () => {
    const { client, requests } = setup([json(201, {}), json(201, {}), json(201, {})]);
    await client.reserve(budgetId, reserveBody, { idempotencyKey: 'mine' });
    await client.reserve(budgetId, reserveBody);
    await client.reserve(budgetId, reserveBody);
    expect(requests.map((r) => r.headers['idempotency-key'])).toEqual(['mine', 'key-1', 'key-2']);
  });

  it('sends GETs without a body or key, with their query', async () => {
    const { client, requests } = setup([json(200, { items: [], nextCursor: null }), json(200, { items: [], nextCursor: null }), json(200, {})]);
    await client.listMessages(mailboxId, { state: ['READY', 'CLAIMED'], limit: 10 });
    await client.listTasks({ scopeId, state: 'RUNNING', cursor: 'abc' });
    await client.getBarrier(budgetId, 5_000, { epoch: 3 });
    expect(requests.map((r) => r.method)).toEqual(['GET', 'GET', 'GET']);
    expect(requests.every((r) => r.body === undefined && r.headers['idempotency-key'] === undefined)).toBe(true);
    expect(requests[0]!.url).toBe(`http://baton.test/v1/spaces/${spaceId}/mailboxes/${mailboxId}/messages?limit=10&state=READY%2CCLAIMED`);
    expect(new URL(requests[1]!.url).searchParams.get('state')).toBe('RUNNING');
    expect(new URL(requests[1]!.url).searchParams.get('scopeId')).toBe(scopeId);
    expect(new URL(requests[1]!.url).searchParams.get('cursor')).toBe('abc');
    expect(requests[2]!.url).toBe(`http://baton.test/v1/spaces/${spaceId}/barriers/${budgetId}?waitMs=5000&epoch=3`);
  });

  it('sends "{}" on routes without a body, and PUT for limits', async () => {
    const { client, requests } = setup([json(200, {}), json(200, {}), json(200, {})]);
    await client.cancelBarrier(budgetId);
    await client.cancelTask(budgetId);
    await client.setLimits({ maxBacklog: 10 });
    expect(requests.map((r) => [r.method, r.body])).toEqual([
      ['POST', '{}'],
      ['POST', '{}'],
      ['PUT', '{"maxBacklog":10}'],
    ]);
  });

  it('answers null for the 204 of admit and recv', async () => {
    const { client } = setup([json(204, undefined), json(204, undefined)]);
    const body = { scopeId, mailboxId, holder: 'w', holderSession: 's' };
    expect(await client.admit(body)).toBeNull();
    expect(await client.recv(mailboxId, body)).toBeNull();
  });

  it('is a WorkerApi', () => {
    const { client } = setup([]);
    const api: WorkerApi = client;
    expect(typeof api.admit).toBe('function');
  });
});

describe('task groups', () => {
  const groupId = '55555555-5555-4555-8555-555555555555';
  const taskId = '66666666-6666-4666-8666-666666666666';
  const base = `http://baton.test/v1/spaces/${spaceId}/task-groups`;

  it('sends each group route with its method, path, body and an Idempotency-Key per logical call', async () => {
    const { client, requests } = setup(Array.from({ length: 8 }, () => json(200, {})));
    await client.createGroup({ mailboxId, condition: 'N_ACCEPTED', threshold: 2, expectedMembers: 3 }, { idempotencyKey: 'group-1' });
    await client.createMemberTask(groupId, { taskKey: 'g:a', input: { n: 1 } });
    await client.joinGroup(groupId, { taskId });
    await client.acceptMember(groupId, taskId);
    await client.rejectMember(groupId, taskId);
    await client.closeGroup(groupId);
    await client.sealGroup(groupId);
    await client.listGroups({ state: ['OPEN', 'SEALED'], limit: 5 });
    expect(requests.map((r) => [r.method, r.url, r.body, r.headers['idempotency-key']])).toEqual([
      ['POST', base, JSON.stringify({ mailboxId, condition: 'N_ACCEPTED', threshold: 2, expectedMembers: 3 }), 'group-1'],
      ['POST', `${base}/${groupId}/tasks`, '{"taskKey":"g:a","input":{"n":1}}', 'key-1'],
      ['POST', `${base}/${groupId}/join-task`, JSON.stringify({ taskId }), 'key-2'],
      ['POST', `${base}/${groupId}/tasks/${taskId}/accept`, '{}', 'key-3'],
      ['POST', `${base}/${groupId}/tasks/${taskId}/reject`, '{}', 'key-4'],
      ['POST', `${base}/${groupId}/close`, '{}', 'key-5'],
      ['POST', `${base}/${groupId}/seal`, '{}', 'key-6'],
      ['GET', `${base}?limit=5&state=OPEN%2CSEALED`, undefined, undefined],
    ]);
  });

  it('long-polls a group: waitMs in the query, the attempt timeout grown by it', async () => {
    const { client, requests, clock } = setup([json(200, { id: groupId }), 'hang'], { retry: { maxAttempts: 1 } });
    expect(await client.getGroup(groupId)).toEqual({ id: groupId });
    await failure(client.getGroup(groupId, 25_000));
    expect(requests.map((r) => r.url)).toEqual([`${base}/${groupId}`, `${base}/${groupId}?waitMs=25000`]);
    expect(clock.slept).toEqual([26_000]);
  });

  it('retries a member create after a lost reply with the same key, and surfaces a verdict conflict unretried', async () => {
    const { client, requests } = setup([new TypeError('socket hang up'), json(201, { taskId, state: 'PENDING', created: true }), envelope(409, 'CONFLICT')]);
    expect(await client.createMemberTask(groupId, { taskKey: 'g:a' })).toEqual({ taskId, state: 'PENDING', created: true });
    expect(await failure(client.acceptMember(groupId, taskId))).toMatchObject({ code: 'CONFLICT', status: 409 });
    expect(requests.map((r) => r.headers['idempotency-key'])).toEqual(['key-1', 'key-1', 'key-2']);
  });
});

describe('errors', () => {
  it('parses the envelope: code, status, message, requestId, details', async () => {
    const details = [{ path: 'body.amountMinor', message: 'must be a string of digits (minor units)' }];
    const { client } = setup([envelope(400, 'VALIDATION_FAILED', {}, details)]);
    const error = await failure(client.reserve(budgetId, reserveBody));
    expect(error).toMatchObject({ name: 'BatonApiError', code: 'VALIDATION_FAILED', status: 400, message: 'VALIDATION_FAILED happened', requestId: 'req-VALIDATION_FAILED', details });
  });

  it('makes BAD_REPLY of a reply without the envelope, keeping the X-Request-Id', async () => {
    const { client } = setup([{ status: 404, headers: { 'x-request-id': 'proxy-1' }, body: '<html>nope</html>' }]);
    const error = await failure(client.getBudget(budgetId));
    expect(error).toMatchObject({ code: 'BAD_REPLY', status: 404, requestId: 'proxy-1' });
    expect(isRetryable(error)).toBe(false);
  });

  it('makes BAD_REPLY of a 2xx that is not JSON', async () => {
    const { client } = setup([{ status: 200, headers: {}, body: 'not json' }]);
    expect(await failure(client.getBudget(budgetId))).toMatchObject({ code: 'BAD_REPLY', status: 200 });
  });
});

describe('retries', () => {
  it('honours Retry-After on 503 (seconds) and 429 (HTTP date), with the same key on every attempt', async () => {
    const clock = new SteppingClock();
    const { client, requests } = setup(
      [
        envelope(503, 'UNAVAILABLE', { 'retry-after': '2' }),
        json(503, undefined, { 'retry-after': '3' }),
        envelope(429, 'RATE_LIMITED', { 'retry-after': new Date(clock.nowMs + 2_000 + 3_000 + 7_000).toUTCString() }),
        json(201, { id: 'r1' }),
      ],
      { clock },
    );
    expect(await client.reserve(budgetId, reserveBody)).toEqual({ id: 'r1' });
    expect(clock.slept).toEqual([2_000, 3_000, 7_000]);
    expect(requests).toHaveLength(4);
    expect(new Set(requests.map((r) => r.headers['idempotency-key']))).toEqual(new Set(['key-1']));
    expect(new Set(requests.map((r) => r.body)).size).toBe(1);
  });

  it('retries 5xx, IDEMPOTENCY_KEY_IN_FLIGHT and network errors with backoff', async () => {
    const { client, requests, clock } = setup(
      [envelope(500, 'INTERNAL'), envelope(409, 'IDEMPOTENCY_KEY_IN_FLIGHT'), new TypeError('fetch failed'), json(502, undefined), json(200, { ok: true })],
      { random: { next: () => 0.5 } },
    );
    expect(await client.settle(budgetId, { reservationId: budgetId, amountMinor: '1', workKey: 'w' })).toEqual({ ok: true });
    expect(requests).toHaveLength(5);
    expect(clock.slept).toEqual([50, 100, 200, 400]);
    expect(new Set(requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
  });

  it.each([
    [400, 'VALIDATION_FAILED'],
    [401, 'UNAUTHENTICATED'],
    [403, 'FORBIDDEN'],
    [404, 'NOT_FOUND'],
    [409, 'CONFLICT'],
    [409, 'INSUFFICIENT_BUDGET'],
    [409, 'LEASE_LOST'],
    [413, 'PAYLOAD_TOO_LARGE'],
    [422, 'IDEMPOTENCY_KEY_REUSED'],
    [429, 'QUOTA_EXHAUSTED'],
    [429, 'BACKLOG_FULL'],
    [429, 'OPERATIONS_EXHAUSTED'],
    [429, 'PLAN_LIMIT_REACHED'],
  ])('does not retry %i %s', async (status, code) => {
    const { client, requests, clock } = setup([envelope(status, code, { 'retry-after': '1' })]);
    const error = await failure(client.reserve(budgetId, reserveBody));
    expect(error).toMatchObject({ code, status, requestId: `req-${code}` });
    expect(requests).toHaveLength(1);
    expect(clock.slept).toEqual([]);
  });

  it('gives up after maxAttempts with the last error', async () => {
    const { client, requests } = setup([envelope(500, 'INTERNAL'), envelope(500, 'INTERNAL'), envelope(503, 'INTERNAL')], { retry: { maxAttempts: 3 } });
    expect(await failure(client.getBudget(budgetId))).toMatchObject({ code: 'INTERNAL', status: 503 });
    expect(requests).toHaveLength(3);
  });

  it('gives up at once when Retry-After runs past maxElapsedMs, telling how long', async () => {
    const { client, requests } = setup([envelope(429, 'RATE_LIMITED', { 'retry-after': '120' })], { retry: { maxElapsedMs: 60_000 } });
    const error = await failure(client.getBudget(budgetId));
    expect(error).toMatchObject({ code: 'RATE_LIMITED', retryAfterMs: 120_000 });
    expect(requests).toHaveLength(1);
  });

  it('surfaces a lasting network failure as NETWORK, status 0', async () => {
    const { client } = setup([new TypeError('fetch failed'), new TypeError('fetch failed')], { retry: { maxAttempts: 2 } });
    const error = await failure(client.getBudget(budgetId));
    expect(error).toMatchObject({ code: 'NETWORK', status: 0, requestId: null });
    expect(isTransportFailure(error)).toBe(true);
  });
});

describe('timeouts and aborts', () => {
  it('times out each attempt and retries it with the same key', async () => {
    const { client, requests, clock } = setup(['hang', 'deaf', json(201, { id: 'r1' })], { timeoutMs: 1_234 });
    expect(await client.reserve(budgetId, reserveBody)).toEqual({ id: 'r1' });
    expect(requests).toHaveLength(3);
    expect(requests.slice(0, 2).every((r) => r.signal.aborted)).toBe(true);
    expect(requests[2]!.signal.aborted).toBe(false);
    expect(new Set(requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
    // Two timeouts of 1,234 ms, each followed by a (zero-jitter) backoff sleep.
    expect(clock.slept).toEqual([1_234, 0, 1_234, 0]);
  });

  it('reports the timeout when attempts run out', async () => {
    const { client } = setup(['hang'], { retry: { maxAttempts: 1 } });
    const error = await failure(client.getBudget(budgetId));
    expect(error).toMatchObject({ code: 'NETWORK', status: 0, details: { kind: 'timeout', timeoutMs: 1_000 } });
  });

  it('lets a long poll take its wait on top of the timeout, a per-call timeout overriding the default', async () => {
    const { client, clock } = setup(['hang', 'hang', 'hang'], { retry: { maxAttempts: 1 } });
    await failure(client.getBarrier(budgetId, 20_000));
    await failure(client.admit({ scopeId, mailboxId, holder: 'w', holderSession: 's', waitMs: 120_000 }, { timeoutMs: 500 }));
    await failure(client.getWaiter(budgetId));
    expect(clock.slept).toEqual([21_000, 30_500, 1_000]); // the server holds a poll at most 30 s
  });

  it('stops at once when the caller aborts an attempt, rejecting with the reason', async () => {
    const controller = new AbortController();
    const reason = new Error('worker stopping');
    const { client, requests } = setup(['hang', json(200, {})]);
    const call = client.getBudget(budgetId, { signal: controller.signal });
    await new Promise((r) => setImmediate(r)); // the attempt is in flight
    controller.abort(reason);
    await expect(call).rejects.toBe(reason);
    expect(requests).toHaveLength(1);
  });

  it('stops retrying when the caller aborts during the backoff', async () => {
    const controller = new AbortController();
    const reason = new Error('worker stopping');
    const { client, requests, clock } = setup([envelope(503, 'INTERNAL', { 'retry-after': '5' }), json(200, {})]);
    clock.onSleep = (ms) => {
      if (ms === 5_000) controller.abort(reason);
    };
    await expect(client.getBudget(budgetId, { signal: controller.signal })).rejects.toBe(reason);
    expect(requests).toHaveLength(1);
  });

  it('does not send when already aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('gone'));
    const { client, requests } = setup([json(200, {})]);
    await expect(client.getBudget(budgetId, { signal: controller.signal })).rejects.toThrow('gone');
    expect(requests).toHaveLength(0);
  });
});
