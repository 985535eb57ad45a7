import { describe, expect, it } from 'vitest';
import type { Call, History } from '../history';
import { checkAllowances } from './allowances';
import { checkBudgets } from './budgets';
import { checkClaims } from './claims';
import { checkJournal } from './journal';
import { checkLeases } from './leases';
import { checkOutage } from './outage';
import { checkOutageLogs } from '../checker';
import type { Snapshot } from './snapshot';
import { checkTasks } from './tasks';

/**
 * Each check of the torture run, on small hand-made histories: it passes what is right and
 * names what is wrong (a checker never seen to fail proves nothing). The real-stack planted bug
 * is in test/torture.test.ts.
 */

const t0 = Date.UTC(2026, 0, 1);
const iso = (ms: number): string => new Date(t0 + ms).toISOString();
const msg = '11111111-1111-4111-8111-111111111111';
const task = '22222222-2222-4222-8222-222222222222';
const c1 = 'c1000000-0000-4000-8000-000000000001';
const c2 = 'c2000000-0000-4000-8000-000000000002';
const budgetId = 'b0000000-0000-4000-8000-000000000000';
const allowanceId = 'a0000000-0000-4000-8000-000000000000';
let callNo = 0;

function call(proc: string, method: string, path: string, body: unknown, atMs: number, endMs: number | undefined, status?: number, reply?: unknown): Call {
  const c: Call = { proc, call: ++callNo, method, path, body, idem: `${proc}-${callNo}`, invokedAtMs: t0 + atMs, firstInvokedAtMs: t0 + atMs };
  if (endMs !== undefined) Object.assign(c, { endedAtMs: t0 + endMs, status, reply });
  return c;
}

const history = (calls: Call[], notes: History['notes'] = []): History => ({ calls, notes });
const admit = (proc: string, token: string, attempt: number, atMs: number, leaseEndMs: number): Call =>
  call(proc, 'POST', '/tasks/admit', {}, atMs, atMs + 10, 200, { messageId: msg, taskId: task, token, attempt, leaseExpiresAt: iso(leaseEndMs) });
const complete = (proc: string, token: string, atMs: number, status: number, payload: unknown = { by: proc }): Call =>
  call(proc, 'POST', `/messages/${msg}/complete`, { token, result: { payload } }, atMs, atMs + 10, status, status === 200 ? { state: 'ACKED' } : { error: { code: 'LEASE_LOST' } });

describe('checkLeases', () => {
  it('passes a lease taken again after it expired, and a stale complete answered LEASE_LOST', () => {
    expect(checkLeases(history([admit('a', 't1', 1, 0, 5_000), admit('b', 't2', 2, 5_200, 10_000), complete('a', 't1', 6_000, 409), complete('b', 't2', 6_100, 200)]))).toEqual([]);
  });

  it('names a second grant while the first lease was live and not ended', () => {
    const found = checkLeases(history([admit('a', 't1', 1, 0, 5_000), admit('b', 't2', 2, 2_000, 7_000)]));
    expect(found).toEqual([expect.stringContaining('attempt 2 (b) was granted')]);
  });

  it('passes a second grant after the first holder nacked, even when its nack was answered by a later retry', () => {
    const nackFirst = call('a', 'POST', `/messages/${msg}/nack`, { token: 't1', retry: true }, 1_000, undefined);
    const nackRetry = { ...call('a', 'POST', `/messages/${msg}/nack`, { token: 't1', retry: true }, 3_000, 3_010, 200, { state: 'READY' }), firstInvokedAtMs: t0 + 1_000 };
    expect(checkLeases(history([admit('a', 't1', 1, 0, 5_000), nackFirst, admit('b', 't2', 2, 2_000, 7_000), nackRetry]))).toEqual([]);
  });

  it('names a complete accepted after a later grant, and one accepted after its own lease ended', () => {
    expect(checkLeases(history([admit('a', 't1', 1, 0, 5_000), admit('b', 't2', 2, 5_200, 10_000), complete('a', 't1', 6_000, 200)]))).toEqual([expect.stringContaining('after attempt 2 (b) was granted')]);
    expect(checkLeases(history([admit('a', 't1', 1, 0, 5_000), complete('a', 't1', 5_500, 200)]))).toEqual([expect.stringContaining('after its lease ended')]);
  });

  it('reads complete-batch items one by one', () => {
    const batch = call('a', 'POST', '/messages/complete-batch', { items: [{ messageId: msg, token: 't1' }] }, 6_000, 6_010, 200, { items: [{ messageId: msg, status: 200, body: { state: 'ACKED' } }] });
    expect(checkLeases(history([admit('a', 't1', 1, 0, 5_000), admit('b', 't2', 2, 5_200, 10_000), batch]))).toHaveLength(1);
  });
});

describe('checkTasks', () => {
  const snapshot = (state: string, outcome: unknown): Snapshot => ({ events: [], tasks: new Map([[task, { id: task, state, outcome }]]), budget: {}, reservations: [], allowance: {} });
  const submit = call('p', 'POST', '/tasks', { taskKey: 'k' }, 0, 10, 201, { taskId: task, created: true });
  const outcomeNote = { kind: 'note' as const, proc: 'a', atMs: t0, what: 'outcome', data: { taskId: task, outcome: { by: 'a' } } };

  it('passes a task that succeeded with the outcome its worker reported', () => {
    expect(checkTasks(history([submit, admit('a', 't1', 1, 20, 5_000), complete('a', 't1', 100, 200)], [outcomeNote]), snapshot('SUCCEEDED', { by: 'a' }))).toEqual([]);
  });

  it('names an acknowledged submit the store lost, and an outcome no worker reported', () => {
    const empty: Snapshot = { ...snapshot('PENDING', null), tasks: new Map() };
    expect(checkTasks(history([submit]), empty)).toEqual([expect.stringContaining('is not in the store')]);
    expect(checkTasks(history([submit], [outcomeNote]), snapshot('SUCCEEDED', { by: 'z' }))).toEqual([expect.stringContaining('which no worker reported')]);
  });

  it('names two acknowledged completes of one delivery with different tokens', () => {
    const found = checkTasks(history([admit('a', 't1', 1, 0, 5_000), admit('b', 't2', 2, 5_200, 10_000), complete('a', 't1', 6_000, 200), complete('b', 't2', 6_100, 200, { by: 'a' })], [outcomeNote]), snapshot('SUCCEEDED', { by: 'a' }));
    expect(found).toEqual([expect.stringContaining('2 completes with different tokens')]);
  });
});

describe('checkClaims', () => {
  const acquire = (proc: string, id: string, fencingToken: number, atMs: number, leaseEndMs: number): Call =>
    call(proc, 'POST', '/claims', { claimKey: 'k' }, atMs, atMs + 10, 201, { id, claimKey: 'k', fencingToken, leaseExpiresAt: iso(leaseEndMs) });
  const release = (proc: string, id: string, atMs: number, status: number): Call => call(proc, 'POST', `/claims/${id}/release`, {}, atMs, atMs + 10, status, {});

  it('passes claims taken in turn with growing fencing tokens', () => {
    expect(checkClaims(history([acquire('a', c1, 1, 0, 5_000), release('a', c1, 1_000, 200), acquire('b', c2, 2, 1_100, 6_000)]))).toEqual([]);
  });

  it('names two holders at once, a reused fencing token and a token out of grant order', () => {
    expect(checkClaims(history([acquire('a', c1, 1, 0, 5_000), acquire('b', c2, 2, 1_000, 6_000)]))).toEqual([expect.stringContaining(`while claim ${c1} (a) held it`)]);
    expect(checkClaims(history([acquire('a', c1, 1, 0, 5_000), release('a', c1, 100, 200), acquire('b', c2, 1, 1_000, 6_000)]))).toEqual([expect.stringContaining('share fencing token 1')]);
    expect(checkClaims(history([acquire('a', c1, 2, 0, 1_000), acquire('b', c2, 1, 2_000, 6_000)]))).toEqual([expect.stringContaining(`before claim ${c2} (fencing 1) was asked for`)]);
  });

  it('names a release accepted after the next claim was granted', () => {
    expect(checkClaims(history([acquire('a', c1, 1, 0, 5_000), acquire('b', c2, 2, 5_100, 10_000), release('a', c1, 6_000, 200)]))).toEqual([expect.stringContaining(`a release of claim ${c1} was accepted`)]);
  });
});

describe('checkBudgets', () => {
  const budget = { id: budgetId, limitMinor: '100', reservedMinor: '10', settledMinor: '5', availableMinor: '85' };
  const settled = (workKey: string, amountMinor: string, entryId = `e-${workKey}`) => ({ type: 'budget.settled', aggregate: { id: budgetId }, data: { workKey, amountMinor, entryId } });
  const snapshot = (over: Partial<Snapshot> = {}): Snapshot => ({
    events: [settled('w1', '5')],
    tasks: new Map(),
    budget,
    reservations: [{ id: 'r1', state: 'ACTIVE', settledMinor: '0', remainingMinor: '10' }, { id: 'r2', state: 'SETTLED', settledMinor: '5', remainingMinor: '0' }],
    allowance: {},
    ...over,
  });
  const settle = (workKey: string, entryId: string): Call => call('s', 'POST', `/budgets/${budgetId}/settle`, { workKey }, 0, 10, 200, { entry: { id: entryId } });

  it('passes a budget that conserves, with each acknowledged settle journaled once', () => {
    expect(checkBudgets(history([settle('w1', 'e-w1')]), snapshot())).toEqual([]);
  });

  it('names a budget that does not conserve, a workKey applied twice and a settle acknowledged but not journaled', () => {
    expect(checkBudgets(history([]), snapshot({ budget: { ...budget, availableMinor: '86' } }))).toEqual([expect.stringContaining('does not conserve')]);
    expect(checkBudgets(history([]), snapshot({ events: [settled('w1', '5'), settled('w1', '5', 'e2')] }))).toEqual(expect.arrayContaining([expect.stringContaining('workKey w1 applied 2 times')]));
    expect(checkBudgets(history([settle('w9', 'e9')]), snapshot())).toEqual([expect.stringContaining('w9 was acknowledged')]);
  });
});

describe('checkAllowances', () => {
  const allowance = { id: allowanceId, unitsLimit: 3 };
  const consumed = (id: string, units: number, windowStartsAt: string) => ({ type: 'allowance.consumed', aggregate: { id: allowanceId }, data: { consumptionId: id, units, windowStartsAt } });
  const snapshot = (events: any[]): Snapshot => ({ events, tasks: new Map(), budget: {}, reservations: [], allowance });

  it('passes windows within the limit, and names one granted beyond it', () => {
    expect(checkAllowances(history([]), snapshot([consumed(c1, 2, iso(0)), consumed(c2, 1, iso(0)), consumed('c3', 3, iso(2_000))]))).toEqual([]);
    expect(checkAllowances(history([]), snapshot([consumed(c1, 2, iso(0)), consumed(c2, 2, iso(0))]))).toEqual([expect.stringContaining('granted 4 units of 3')]);
  });

  it('names a consumption acknowledged to a client but missing from the journal', () => {
    const consume = call('c', 'POST', `/allowances/${allowanceId}/consume`, {}, 0, 10, 201, { id: 'c9', units: 1, windowStartsAt: iso(0), replay: false });
    expect(checkAllowances(history([consume]), snapshot([]))).toEqual([expect.stringContaining('consumption c9 was acknowledged')]);
  });
});

describe('checkJournal', () => {
  const event = (eventId: string) => ({ eventId, type: 'x', aggregate: { id: 'a' } });
  const snapshot = (events: any[]): Snapshot => ({ events, tasks: new Map(), budget: {}, reservations: [], allowance: {} });
  const page = (ids: string[], atMs: number): Call => call('r', 'GET', '/events', null, atMs, atMs + 1, 200, { items: ids.map(event), nextCursor: ids.at(-1) ?? '0' });

  it('passes a reader that saw the journal in order, and names one that skipped an event', () => {
    const journal = snapshot([event('1'), event('2'), event('3')]);
    expect(checkJournal(history([page(['1', '2'], 0), page(['3'], 10)]), journal)).toEqual([]);
    expect(checkJournal(history([page(['1'], 0), page(['3'], 10)]), journal)).toEqual([expect.stringContaining('its 2th event was 3')]);
  });

  it('names an acknowledged created task whose task.submitted is not journaled', () => {
    const submit = call('p', 'POST', '/tasks', { taskKey: 'k' }, 0, 10, 201, { taskId: task, created: true });
    expect(checkJournal(history([submit]), snapshot([]))).toEqual([expect.stringContaining('task.submitted is not in the journal')]);
  });
});

describe('checkOutage', () => {
  const answered = (atMs: number, status: number, reply: unknown, retryAfter?: string): Call => ({ ...call('w', 'POST', '/tasks', {}, atMs, atMs + 5, status, reply), ...(retryAfter === undefined ? {} : { retryAfter }) });
  const unavailable = { error: { code: 'UNAVAILABLE', message: 'the store cannot be reached', requestId: 'r' } };
  const outage = (fromMs: number, toMs: number): History['notes'][number] => ({ kind: 'note', proc: 'orchestrator', atMs: t0 + toMs, what: 'pg-outage', data: { fromMs: t0 + fromMs, toMs: t0 + toMs } });

  it('passes 503 UNAVAILABLE with Retry-After during an outage, and names a 500 or a 503 without Retry-After', () => {
    expect(checkOutage(history([answered(1_000, 503, unavailable, '1'), answered(2_000, 201, { taskId: task })], [outage(500, 3_000)]))).toEqual([]);
    expect(checkOutage(history([answered(1_000, 500, { error: { code: 'INTERNAL' } })]))).toEqual([expect.stringContaining('answered 500: code INTERNAL, not 503 UNAVAILABLE')]);
    expect(checkOutage(history([answered(1_000, 503, unavailable)]))).toEqual([expect.stringContaining('Retry-After missing')]);
    expect(checkOutage(history([answered(1_000, 503, unavailable, '0')]))).toEqual([expect.stringContaining('Retry-After 0')]);
  });

  it('names an outage in which no client saw a 503 (a 503 sent before it began does not count)', () => {
    expect(checkOutage(history([answered(100, 503, unavailable, '1')], [outage(500, 3_000)]))).toEqual([expect.stringContaining('no client saw a 503 while PostgreSQL was down')]);
  });
});

describe('checkOutageLogs', () => {
  it('passes an outage logged once each way, and names a StoreUnavailable logged with its stack', () => {
    const once = ['{"level":40,"reason":"connection refused (ECONNREFUSED)","msg":"store unreachable: calls answer 503 UNAVAILABLE until it answers again"}', '{"level":30,"msg":"store answers again"}'].join('\n');
    expect(checkOutageLogs(new Map([['server0', once]])).violations).toEqual([]);
    const again = `${once}\n{"level":40,"err":{"type":"StoreUnavailable","message":"the store cannot be reached","stack":"StoreUnavailable: ..."},"msg":"limits sync failed"}`;
    expect(checkOutageLogs(new Map([['server0', again]])).violations).toEqual([expect.stringContaining("server0's log holds 1 line(s) with a StoreUnavailable error")]);
  });
});
