import { ManualClock, MemoryStore, monthOf } from '@baton/core';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  materializeBody,
  materializeParam,
  materializeQuery,
  operationName,
  operationsOf,
  requestArbitrary,
  type Operation,
  type Pools,
  type RequestRecipe,
} from '../support/fuzz-arbitraries';
import { adminToken, idem, startTestServer, type TestServer } from '../support/server';

/**
 * Every operation of the served OpenAPI document, fuzzed with fast-check (docs/reliability.md,
 * "Route fuzzing"). Each gets at least 1,000 generated requests, valid and mutated bodies, raw
 * malformed JSON, hostile path ids, query strings and headers, and each reply must be: not 5xx,
 * in time, the error envelope when 4xx; a refused call must change nothing a client can observe;
 * and the server must still be healthy after the route's run.
 *
 * FUZZ_SEED=<n> changes the seed, FUZZ_RUNS=<n> raises the runs (never below 1,000), and
 * FUZZ_ROUTE='POST /v1/spaces/{spaceId}/tasks' runs that route alone.
 */

const seed = Number(process.env.FUZZ_SEED ?? 20_260_101);
const runsPerRoute = Math.max(1_000, Number(process.env.FUZZ_RUNS ?? 1_000));
const onlyRoute = process.env.FUZZ_ROUTE;
/** FUZZ_STATS=1 prints each route's replies by status: how deep the generated requests reach. */
const printStats = process.env.FUZZ_STATS === '1';
/** A reply later than this is a hang (a long poll is released sooner: see `settle`). */
const replyTimeoutMs = 5_000;
/** Refused requests between two snapshots of the tenant's state. */
const windowSize = 50;

/** docs/design/0004-error-codes.md: each error code and its status. */
const statusOfCode: Record<string, number> = {
  UNAUTHENTICATED: 401, FORBIDDEN: 403, ENTITLEMENT_EXCEEDED: 403, NOT_FOUND: 404, VALIDATION_FAILED: 400, IDEMPOTENCY_KEY_REQUIRED: 400, PAYLOAD_TOO_LARGE: 413,
  IDEMPOTENCY_KEY_REUSED: 422, CONFLICT: 409, INSUFFICIENT_BUDGET: 409, TASK_KEY_CONFLICT: 409, LEASE_LOST: 409, CLAIM_HELD: 409, IDEMPOTENCY_KEY_IN_FLIGHT: 409,
  QUOTA_EXHAUSTED: 429, RATE_LIMITED: 429, SERVICE_RATE_LIMITED: 429, CONCURRENCY_LIMITED: 429, OPERATIONS_EXHAUSTED: 429, BACKLOG_FULL: 429, PLAN_LIMIT_REACHED: 429,
};

// The document is read once, before the tests are declared, so each operation gets its own test.
const operations = await servedOperations();

interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload: string | Buffer | undefined;
}

interface Outcome {
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
  /** The manual clock was moved to release a long poll: time passing may change state legitimately. */
  clockMoved: boolean;
}

/** One fuzzed server: the tenant or the operator side, with the real ids the fuzzer aims at. */
interface Target {
  server: TestServer;
  clock: ManualClock;
  pools: Pools;
  /** Secrets for the auth recipes. */
  keys: { valid: string; readOnly: string; otherTenant: string };
  /** What a client (or operator) can observe of the state, as one comparable string. */
  snapshot(): Promise<string>;
  /** The part of it a refused request could move, read straight from the store: cheap enough to take after every request. */
  mark(): Promise<string>;
  /** Puts back what an accepted call may have changed that would stop the fuzzing from reaching deeper. */
  afterAccepted(op: Operation): Promise<void>;
}

const casesPerOperation = new Map<string, number>();
let tenant: Tenant;
let operator: Target;

beforeAll(async () => {
  tenant = await tenantServer();
  operator = await operatorTarget();
}, 60_000);

afterAll(async () => {
  await tenant?.server.close();
  await operator?.server.close();
});

describe('route fuzzing from the OpenAPI document', () => {
  for (const op of operations) {
    const name = operationName(op);
    // FUZZ_ROUTE (a developer's run of one route) registers that route's test alone.
    if (onlyRoute !== undefined && onlyRoute !== name) continue;
    it(`fuzz ${name}`, async () => {
      const target = op.path.startsWith('/admin/') ? operator : await tenant.freshSpace();
      await fuzzOperation(target, op);
      const health = await target.server.baton.app.inject({ method: 'GET', url: '/healthz' });
      expect(health.statusCode, `GET /healthz after fuzzing ${name}`).toBe(200);
    }, 120_000);
  }

  if (onlyRoute !== undefined) {
    it('FUZZ_ROUTE names an operation of the document', () => {
      expect(operations.map(operationName)).toContain(onlyRoute);
    });
    return;
  }

  it('the per-request check fails on a refused request that changed the state (a planted change)', async () => {
    const target = await tenant.freshSpace();
    const watch = new RefusalWatch(target.snapshot, target.mark, 'planted');
    await watch.rebase();
    // A create that really happened, reported as refused: what a server that writes and then refuses looks like.
    const sent: Sent = {
      method: 'POST',
      url: `/v1/spaces/${target.pools.spaceId![0]}/budgets`,
      headers: { authorization: `Bearer ${target.keys.valid}`, 'idempotency-key': idem(), 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'planted', currency: 'EUR', scale: 2, limitMinor: '1' }),
    };
    const outcome = await send(target, sent);
    expect(outcome.statusCode).toBe(201);
    await expect(watch.note(sent, { ...outcome, statusCode: 400 }, false)).rejects.toThrow(/a refused request changed the state/);
  });

  it('fuzzed every operation of the document at least 1,000 times', () => {
    expect(operations.length).toBeGreaterThan(0);
    const short = operations.map(operationName).filter((name) => (casesPerOperation.get(name) ?? 0) < runsPerRoute);
    expect(short, 'operations with fewer fuzz cases than required').toEqual([]);
  });
});

async function servedOperations(): Promise<Operation[]> {
  // With an admin token, as the fuzzed servers have, so the operator routes are in the document too.
  const server = await startTestServer(new MemoryStore());
  try {
    const res = await server.baton.app.inject({ method: 'GET', url: '/v1/openapi.json' });
    return operationsOf(JSON.parse(res.body));
  } finally {
    await server.close();
  }
}

/** Runs the property for one operation: at least `runsPerRoute` requests, each checked. */
async function fuzzOperation(target: Target, op: Operation): Promise<void> {
  const name = operationName(op);
  const watch = new RefusalWatch(target.snapshot, target.mark, name);
  // A fresh rate window per route: each route's requests (and snapshots) fit one minute.
  target.clock.advance(60_000);
  await watch.rebase();
  let cases = 0;
  const statuses = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(requestArbitrary(op, target.pools), async (recipe) => {
      cases++;
      const sent = build(target, op, recipe);
      const outcome = await send(target, sent);
      checkReply(sent, outcome);
      statuses.set(outcome.statusCode, (statuses.get(outcome.statusCode) ?? 0) + 1);
      const accepted = outcome.statusCode < 400;
      if (accepted && op.method !== 'GET') await target.afterAccepted(op);
      await watch.note(sent, outcome, accepted && op.method !== 'GET');
      await watch.checkEvery(windowSize);
    }),
    // Stateful server: shrinking replays against changed state and takes long, so it is opt-in.
    { numRuns: runsPerRoute, seed: seed + hash(name), endOnFailure: process.env.FUZZ_SHRINK !== '1' },
  );
  await watch.flush();
  if (printStats) console.log(`${name}: ${[...statuses].sort(([a], [b]) => a - b).map(([status, n]) => `${status}×${n}`).join(' ')}`);
  casesPerOperation.set(name, (casesPerOperation.get(name) ?? 0) + cases);
}

/** The inject options for a recipe. */
function build(target: Target, op: Operation, recipe: RequestRecipe): Sent {
  let path = op.path.replace('{spaceId}', materializeParam(recipe.spaceId, target.pools.spaceId ?? []));
  for (const [param, choice] of Object.entries(recipe.params)) {
    path = path.replace(`{${param}}`, materializeParam(choice, realIdsFor(target.pools, op.path, param)));
  }
  const headers: Record<string, string> = {};
  const auth = authHeader(target, recipe.auth);
  if (auth !== undefined) headers.authorization = auth;
  const idemKey = idempotencyKey(recipe.idem);
  if (idemKey !== undefined) headers['idempotency-key'] = idemKey;
  const payload = materializeBody(recipe.body);
  if (recipe.contentType !== null && (payload !== undefined || recipe.contentType !== 'application/json')) headers['content-type'] = recipe.contentType;
  if (recipe.requestId !== null) headers['x-request-id'] = recipe.requestId;
  return { method: op.method, url: path + materializeQuery(recipe.query), headers, payload };
}

/** Path ids by the segment before them: `/budgets/{id}` takes budget ids. */
function realIdsFor(pools: Pools, path: string, param: string): string[] {
  const segments = path.split('/');
  const before = segments[segments.indexOf(`{${param}}`) - 1] ?? '';
  const byName: Record<string, string> = { reservationId: 'reservations', taskId: 'tasks', scopeId: 'runs', orgId: 'orgs', keyId: 'keys' };
  return pools[byName[param] ?? before] ?? pools.uuid ?? [];
}

function authHeader(target: Target, recipe: RequestRecipe['auth']): string | undefined {
  const { valid, readOnly, otherTenant } = target.keys;
  switch (recipe) {
    case 'valid': return `Bearer ${valid}`;
    case 'read-only': return `Bearer ${readOnly}`;
    case 'none': return undefined;
    case 'admin-token': return `Bearer ${adminToken}`;
    case 'wrong-scheme': return `Basic ${Buffer.from('user:pass').toString('base64')}`;
    case 'bare-bearer': return 'Bearer';
    case 'lowercase-bearer': return `bearer ${valid}`;
    case 'junk-key': return 'Bearer bk_not-a-real-key';
    case 'valid-with-suffix': return `Bearer ${valid}x`;
    case 'huge': return `Bearer ${'k'.repeat(100_000)}`;
    case 'unicode': return 'Bearer ключ🔑';
    case 'other-tenant': return `Bearer ${otherTenant}`;
  }
}

let idemSequence = 0;
function idempotencyKey(recipe: RequestRecipe['idem']): string | undefined {
  switch (recipe) {
    case 'fresh': return idem();
    case 'missing': return undefined;
    case 'empty': return '';
    case 'space': return ' ';
    case 'max': return `${++idemSequence}`.padEnd(255, 'k');
    case 'too-long': return 'k'.repeat(256);
    case 'huge': return 'k'.repeat(100_000);
    case 'unicode': return `ключ🔑-${++idemSequence}`;
    // One key for many different bodies: the second and later are IDEMPOTENCY_KEY_REUSED (or replays).
    case 'reused': return 'fuzz-reused-key';
  }
}

/**
 * Injects the request, bounded in time. A long poll on the manual clock waits for the clock,
 * so whenever the request is parked on a clock timer, the clock jumps to that timer (as time
 * would pass for a real client), and the outcome says so.
 */
async function send(target: Target, sent: Sent): Promise<Outcome> {
  let finished = false;
  let clockMoved = false;
  const reply = target.server.baton.app
    .inject({ method: sent.method as 'GET', url: sent.url, headers: sent.headers, ...(sent.payload === undefined ? {} : { payload: sent.payload }) })
    .finally(() => {
      finished = true;
    });
  const started = performance.now();
  while (!finished) {
    await new Promise((resolve) => setImmediate(resolve));
    if (finished) break;
    if (performance.now() - started > replyTimeoutMs) throw new Error(`no reply within ${replyTimeoutMs} ms: ${describeSent(sent)}`);
    const next = target.clock.nextTimerMs();
    if (next !== undefined) {
      target.clock.advance(Math.max(0, next - target.clock.now()));
      clockMoved = true;
    }
  }
  const res = await reply;
  return { statusCode: res.statusCode, headers: res.headers, body: res.body, clockMoved };
}

/**
 * Never 5xx; every reply names its request; every 4xx is the envelope of docs/design/0004-error-codes.md. Plain
 * checks rather than `expect`: this runs 100,000 times, and the request is described only on failure.
 */
function checkReply(sent: Sent, outcome: Outcome): void {
  const fail = (what: string): never => {
    throw new Error(`${what}\n  request: ${describeSent(sent, outcome)}`);
  };
  if (outcome.statusCode >= 500) fail(`${outcome.statusCode}: a 5xx`);
  const requestId = outcome.headers['x-request-id'];
  if (typeof requestId !== 'string' || requestId.length === 0) fail('no X-Request-Id header');
  if (outcome.statusCode < 400) return;
  let body: any;
  try {
    body = JSON.parse(outcome.body);
  } catch {
    fail('4xx body is not JSON');
  }
  const error = body?.error;
  if (typeof error !== 'object' || error === null) fail('4xx body has no "error" object');
  if (Object.keys(body).length !== 1) fail('the envelope has members besides "error"');
  if (statusOfCode[error.code] !== outcome.statusCode) fail(`code ${error.code} is unknown or not answered with ${outcome.statusCode} (docs/design/0004-error-codes.md)`);
  if (typeof error.message !== 'string' || error.message.length === 0) fail('error.message is not a non-empty string');
  if (error.requestId !== requestId) fail('error.requestId differs from X-Request-Id');
  if (error.details !== undefined && (typeof error.details !== 'object' || error.details === null)) fail('error.details is not an object or array');
  if (outcome.statusCode === 429 && !(Number(outcome.headers['retry-after']) >= 1)) fail('429 without Retry-After of at least 1');
}

/** A short, printable account of a request (bodies cut), for failure messages. */
function describeSent(sent: Sent, outcome?: Outcome): string {
  const body = sent.payload === undefined ? '(no body)' : Buffer.isBuffer(sent.payload) ? `bytes ${sent.payload.toString('hex').slice(0, 40)}` : `${sent.payload.length} chars ${JSON.stringify(sent.payload.slice(0, 160))}`;
  const headers = Object.entries(sent.headers).map(([k, v]) => `${k}: ${JSON.stringify(v.slice(0, 60))}${v.length > 60 ? `…(${v.length})` : ''}`).join(', ');
  const reply = outcome ? ` -> ${outcome.statusCode} ${outcome.body.slice(0, 200)}` : '';
  return `${sent.method} ${sent.url.slice(0, 300)} [${headers}] ${body}${reply}`;
}

/**
 * "A refused request changes nothing", checked at two grains:
 *
 * - After every request, the journal's newest event and the organization's usage counters
 *   (`mark`, read from the store in microseconds) must be as they were before it, unless the
 *   request was an accepted write or moved the clock. Writes are accepted often enough (a third of
 *   barrier cancels, a fifth of space creates) that a check per window alone would skip most of
 *   their refused requests.
 * - Every `windowSize` requests, the whole observable state (`snapshot`: also the census of every
 *   resource by state, through the API) when nothing in the window was accepted or moved the
 *   clock. A window with such a request is not compared (its change is legitimate) and starts a
 *   new baseline. Reads (GET) count as refused here: a read must not change state either.
 */
class RefusalWatch {
  private baseline = '';
  private lastMark = '';
  /** The window's requests, described only when a check fails. */
  private window: Array<[Sent, Outcome]> = [];
  private dirty = false;

  constructor(
    private readonly snapshot: () => Promise<string>,
    private readonly mark: () => Promise<string>,
    private readonly route: string,
  ) {}

  async rebase(): Promise<void> {
    this.baseline = await this.snapshot();
    this.lastMark = await this.mark();
    this.window = [];
    this.dirty = false;
  }

  async note(sent: Sent, outcome: Outcome, accepted: boolean): Promise<void> {
    this.window.push([sent, outcome]);
    const mark = await this.mark();
    if (accepted || outcome.clockMoved) this.dirty = true;
    else if (mark !== this.lastMark) {
      throw new Error(`${this.route}: a refused request changed the state.\nbefore: ${this.lastMark}\nafter:  ${mark}\nrequest: ${describeSent(sent, outcome)}`);
    }
    this.lastMark = mark;
  }

  async checkEvery(size: number): Promise<void> {
    if (this.window.length >= size) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.dirty) return this.rebase();
    const now = await this.snapshot();
    if (now !== this.baseline) {
      const requests = this.window.map(([sent, outcome], i) => `  ${i + 1}. ${describeSent(sent, outcome)}`).join('\n');
      throw new Error(`${this.route}: state changed across refused requests only.\nbefore: ${this.baseline}\nafter:  ${now}\nrequests:\n${requests}`);
    }
    this.window = [];
  }
}

function hash(text: string): number {
  let h = 0;
  for (const ch of text) h = (Math.imul(h, 31) + ch.charCodeAt(0)) | 0;
  return Math.abs(h) % 1_000_000;
}

/** Fails setup loudly when a fixture call does not answer as expected. */
function created<T = any>(res: { statusCode: number; body: any }, what: string): T {
  if (res.statusCode >= 300) throw new Error(`fuzz setup: ${what} answered ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body as T;
}

type SpaceApi = (method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown) => Promise<{ statusCode: number; body: any }>;

/** Calls /v1/spaces/{spaceId}{path} with `key` (and a fresh Idempotency-Key on writes). */
function spaceApi(server: TestServer, spaceId: string, key: string): SpaceApi {
  return (method, path, body) => {
    const headers: Record<string, string> = { authorization: `Bearer ${key}` };
    if (method !== 'GET') headers['idempotency-key'] = idem();
    return server.inject(method, `/v1/spaces/${spaceId}${path}`, headers, body);
  };
}

/**
 * The tenant side: one server and an ENTERPRISE organization without rate or load caps (so
 * 100,000 requests are not all 429). Each route is fuzzed in a space of its own (`freshSpace`),
 * so what earlier routes created does not slow later ones, and a route fuzzed alone
 * (FUZZ_ROUTE) meets the same state as in the full run.
 */
interface Tenant {
  server: TestServer;
  freshSpace(): Promise<Target>;
}

async function tenantServer(): Promise<Tenant> {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  // A sealing key so destinations can be created; nothing here runs the dispatcher, so no webhook is ever sent.
  const server = await startTestServer(new MemoryStore(), { clock, webhooks: { secretKey: Buffer.alloc(32, 7), allowPrivate: false } });
  const uncapped = { requestsPerMinute: null, agentsAtOnce: null, activeTasks: null, activeRuns: null, operationsPerMonth: null, spaces: null, apiKeys: null };
  created(await server.admin('PUT', `/orgs/${server.orgId}/plan`, { plan: 'ENTERPRISE', limits: uncapped }), 'plan');
  const otherOrg = created(await server.admin('POST', '/orgs', { name: 'other-org', plan: 'TEAM' }), 'other org');
  const otherOrgKey = created(await server.admin('POST', `/orgs/${otherOrg.id}/keys`, { name: 'other' }), 'other key');
  let spaces = 0;
  return { server, freshSpace: () => tenantSpace(server, clock, `fuzz-${++spaces}`, otherOrgKey.secret) };
}

/** A space with one resource of every kind, so generated ids often exist and requests get past 404 into the business rules. */
async function tenantSpace(server: TestServer, clock: ManualClock, name: string, otherTenantKey: string): Promise<Target> {
  const space = created(await server.admin('POST', `/orgs/${server.orgId}/spaces`, { name }), 'space');
  const key = created(await server.admin('POST', `/orgs/${server.orgId}/keys`, { name, spaceIds: [space.id] }), 'key').secret as string;
  const readOnly = created(await server.admin('POST', `/orgs/${server.orgId}/keys`, { name, spaceIds: [space.id], permissions: ['coordination_read'] }), 'read-only key').secret as string;
  const api = spaceApi(server, space.id, key);

  const scope = '11111111-1111-4111-8111-111111111111';
  const run = created(await api('POST', '/runs', { scopeId: scope, name: 'fuzz' }), 'run');
  const childRun = created(await api('POST', '/runs', { parentScopeId: scope, name: 'child' }), 'child run');
  const box = created(await api('POST', '/mailboxes', { name: 'fuzz-box' }), 'mailbox');
  const box2 = created(await api('POST', '/mailboxes', { name: 'fuzz-box-2' }), 'mailbox 2');
  const budget = created(await api('POST', '/budgets', { name: 'fuzz-budget', currency: 'EUR', scale: 2, limitMinor: '100000' }), 'budget');
  const reservation = created(await api('POST', `/budgets/${budget.id}/reserve`, { scopeId: scope, holder: 'fuzz', amountMinor: '100' }), 'reservation');
  const pool = created(await api('POST', '/pools', { name: 'gpu', capacity: 4 }), 'pool');
  const workLimit = created(await api('POST', '/work-limits', { name: 'wl', maxConcurrent: 4 }), 'work limit');
  const allowance = created(await api('POST', '/allowances', { name: 'tokens', unitsLimit: 100, windowSeconds: 60 }), 'allowance');
  created(await api('POST', `/allowances/${allowance.id}/consume`, { scopeId: scope, units: 100, holder: 'fuzz' }), 'consume');
  const waiter = created(await api('POST', `/allowances/${allowance.id}/wait`, { scopeId: scope, units: 10, holder: 'fuzz' }), 'waiter');
  const messages = [];
  for (let i = 0; i < 3; i++) messages.push(created(await api('POST', `/mailboxes/${box2.id}/messages`, { scopeId: scope, payload: { i } }), 'message'));
  const delivery = created(await api('POST', `/mailboxes/${box2.id}/recv`, { scopeId: scope, holder: 'fuzz', holderSession: 's1', leaseSeconds: 600 }), 'recv');
  const task = created(await api('POST', '/tasks', { scopeId: scope, mailboxId: box.id, taskKey: 'fuzz-task-1', input: { a: 1 }, requirements: { pools: [{ name: 'gpu', units: 1 }] } }), 'task');
  const task2 = created(await api('POST', '/tasks', { scopeId: scope, mailboxId: box.id, taskKey: 'fuzz-task-2', input: { a: 2 } }), 'task 2');
  const admitted = created(await api('POST', '/tasks/admit', { scopeId: scope, mailboxId: box.id, holder: 'fuzz', holderSession: 's1', leaseSeconds: 600 }), 'admit');
  const barrier = created(await api('POST', '/barriers', { scopeId: scope, target: 3 }), 'barrier');
  const claim = created(await api('POST', '/claims', { claimKey: 'fuzz-lock', scopeId: scope, holder: 'fuzz', holderSession: 's1', leaseSeconds: 600 }), 'claim');
  const timer = created(await api('POST', '/timers', { timerKey: 'fuzz-timer', scopeId: scope, delaySeconds: 3600, mailboxId: box.id, payload: { t: 1 } }), 'timer');
  const group = created(await api('POST', '/task-groups', { parentScopeId: scope, mailboxId: box.id, condition: 'FIRST_ACCEPTED' }), 'group');
  const member = created(await api('POST', `/task-groups/${group.groupId}/tasks`, { taskKey: 'fuzz-member' }), 'group member');
  const destination = created(await api('POST', '/destinations', { url: 'https://hooks.invalid/baton' }), 'destination');
  const events = created(await api('GET', '/events?limit=1'), 'events');

  const tokens = [delivery.token, admitted.token, claim.token].filter((t): t is string => typeof t === 'string');
  const taskIds: string[] = [task.taskId, task2.taskId, member.taskId];
  const pools: Pools = {
    spaceId: [space.id, server.spaceId],
    budgets: [budget.id],
    reservations: [reservation.id],
    reservationId: [reservation.id],
    mailboxes: [box.id, box2.id],
    mailboxId: [box.id, box2.id],
    messages: [delivery.messageId, admitted.messageId, ...messages.map((m: any) => m.id)].filter(Boolean),
    messageId: [delivery.messageId, admitted.messageId].filter(Boolean),
    tasks: taskIds,
    taskId: taskIds,
    barriers: [barrier.id],
    claims: [claim.id],
    timers: [timer.id],
    pools: [pool.id],
    'work-limits': [workLimit.id],
    allowances: [allowance.id],
    'allowance-waiters': [waiter.id],
    'task-groups': [group.groupId],
    destinations: [destination.id],
    destinationId: [destination.id],
    eventId: events.items?.[0]?.eventId ? [String(events.items[0].eventId)] : [],
    runs: [run.scopeId, childRun.scopeId, group.scopeId],
    scopeId: [scope, childRun.scopeId, group.scopeId],
    parentScopeId: [scope],
    token: tokens,
    name: ['gpu', 'wl', 'tokens', 'fuzz-budget'],
    workLimit: ['wl'],
    holder: ['fuzz'],
    holderSession: ['s1'],
    claimKey: ['fuzz-lock'],
    timerKey: ['fuzz-timer'],
    taskKey: ['fuzz-task-1', 'fuzz-task-2'],
    subscriberId: ['sub-1'],
    currency: ['EUR', 'USD'],
    uuid: [space.id, box.id, budget.id, task.taskId, scope],
  };
  return {
    server,
    clock,
    pools,
    keys: { valid: key, readOnly, otherTenant: otherTenantKey },
    snapshot: spaceSnapshot(api),
    mark: storeMark(server, space.id),
    afterAccepted: async (op) => {
      // Space limits a fuzzer set (a rate of 1, a payload cap of 1 byte) would turn every later request into a 429 or 413.
      if (op.method === 'PUT' && op.path.endsWith('/limits')) await restoreSpaceLimits(api, clock);
    },
  };
}

const roomyLimits = { requestsPerMinute: 100_000, maxBacklog: 1_000_000, maxPayloadBytes: 65_536, maxLeaseSeconds: 600, maxPendingWaiters: 1_000_000, maxArmedTimers: 1_000_000 };

async function restoreSpaceLimits(api: SpaceApi, clock: ManualClock): Promise<void> {
  clock.advance(60_000); // out of a rate window a low requestsPerMinute may have used up
  created(await api('PUT', '/limits', roomyLimits), 'restore limits');
}

/**
 * The space's observable state: the journal's newest event, the census of every resource by
 * state, and the usage counters that refused calls must not move (operations, load).
 */
function spaceSnapshot(api: SpaceApi): () => Promise<string> {
  let cursor: string | undefined;
  let newest = 'none';
  return async () => {
    // Follow the journal from where the last snapshot stopped: one call when nothing was added.
    for (;;) {
      const page = created(await api('GET', `/events?limit=500${cursor ? `&cursor=${cursor}` : ''}`), 'events');
      if (page.items.length === 0) break;
      newest = String(page.items[page.items.length - 1].eventId);
      cursor = page.nextCursor;
    }
    const census = created(await api('GET', '/diagnostics/census'), 'census');
    const usage = created(await api('GET', '/usage'), 'usage');
    const counters = { operations: usage.operations, activeTasks: usage.activeTasks, activeRuns: usage.activeRuns, liveLeases: usage.liveLeases };
    return JSON.stringify({ newestEvent: newest, census, counters });
  };
}

/**
 * The space's journal head and its organization's usage counters, read from the store and the
 * server's usage ledger as GET /usage reads them (the fuzzed space is the organization's only
 * busy one while its route is fuzzed).
 */
function storeMark(server: TestServer, spaceId: string): () => Promise<string> {
  const deps = server.baton.deps;
  const orgId = server.orgId;
  let newest = '0';
  return async () => {
    const nowMs = deps.clock.now();
    const [events, stored, load] = await deps.store.read(async (tx) =>
      Promise.all([tx.events.listAfter(spaceId, newest, 1_000), tx.usage.operationsOf(monthOf(nowMs), [orgId]), tx.usage.loadOf([orgId], nowMs)]),
    );
    if (events.length > 0) newest = String(events[events.length - 1]!.eventId);
    const operations = (stored.get(orgId) ?? 0) + deps.limits.ledger.unsyncedOperationsOf(orgId, nowMs);
    return JSON.stringify({ newestEvent: newest, operations, load: load.get(orgId) ?? null });
  };
}

/**
 * The operator side, on its own server and store: its clock route moves time by up to ten years
 * a call, and its plan and key routes would otherwise reach the tenant being fuzzed.
 */
async function operatorTarget(): Promise<Target> {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const server = await startTestServer(new MemoryStore(), { clock });
  const key = created(await server.admin('POST', `/orgs/${server.orgId}/keys`, { name: 'victim' }), 'key');
  const store = server.baton.deps.store;
  const pools: Pools = { orgs: [server.orgId], keys: [key.id], uuid: [server.orgId, server.spaceId, key.id], name: ['acme'] };
  const snapshot = async (): Promise<string> => {
    const counts = await store.read(async (tx) => ({
      orgs: await tx.orgs.count(),
      org: await tx.orgs.get(server.orgId),
      spaces: await tx.spaces.countByOrg(server.orgId),
      keys: await tx.apiKeys.countActiveByOrg(server.orgId),
    }));
    return JSON.stringify({ ...counts, now: clock.now() });
  };
  // Its snapshot is a few store reads: cheap enough to be the per-request mark too.
  return { server, clock, pools, keys: { valid: adminToken, readOnly: server.key, otherTenant: key.secret }, snapshot, mark: snapshot, afterAccepted: async () => {} };
}
