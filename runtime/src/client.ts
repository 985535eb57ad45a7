import type { schemas } from '@baton/core';
import type { DeliveryView, MemberTaskBody, MessageView, SendBatchBody, SendBody, SubmitBatchBody, TaskSubmitBody, TaskView } from './api-types';
import type { Admitted, BatchItemReply, CallOptions, GetTaskOptions, ClaimApi, ClaimGrant, ClaimView, CreatedItemReply, GroupView, In, Out, RunApi, TaskGroupApi, TimerApi, TimerView, WorkerApi } from './contract';
import { BatonApiError, errorFromReply, isRetryable, networkError, timeoutError } from './errors';
import { systemClock, systemRandom, type RuntimeClock, type RuntimeRandom } from './clock';
import { defaultRetryPolicy, withRetry, type RetryPolicy } from './retry';
import { fetchTransport, type Transport, type TransportRequest, type TransportResponse } from './transport';
import { createWatch, type EventWatch, type WatchOptions, type WatchQuery } from './watch';

/**
 * The typed client of one space: a method per route of docs/api.md under
 * /v1/spaces/{spaceId}. Every call is one logical operation: it is retried (same
 * Idempotency-Key on every attempt, so the server applies it at most once) until it succeeds,
 * fails for good, or its retry policy runs out; then it rejects with a BatonApiError.
 */

type S = typeof schemas;

export interface ClientOptions {
  /** Where the server listens, e.g. http://127.0.0.1:8080 (no /v1). */
  baseUrl: string;
  /** A bearer key, bk_... */
  apiKey: string;
  spaceId: string;
  /** Default: global fetch. The simulator passes its faulty network. */
  transport?: Transport;
  /** Drives backoff sleeps and attempt timeouts. Default: the system clock. */
  clock?: RuntimeClock;
  /** Jitter of the backoff. Default: Math.random. */
  random?: RuntimeRandom;
  /** Per attempt, beyond a long poll's wait (see `attemptTimeoutMs`). Default 10,000. */
  timeoutMs?: number;
  /** Overrides of `defaultRetryPolicy`; `{ maxAttempts: 1 }` turns retrying off. */
  retry?: Partial<RetryPolicy>;
  /** A fresh Idempotency-Key per logical call. Default crypto.randomUUID; seeded in the simulator. */
  newIdempotencyKey?: () => string;
}

export const defaultTimeoutMs = 10_000;
/** The server shortens every long poll to this (docs/api.md): a longer wait never holds a reply longer. */
export const serverMaxWaitMs = 30_000;

/**
 * An attempt of a long poll legitimately takes its wait: the timeout counts from where the
 * server's wait ends, so `timeoutMs` bounds the network and the server's work alone.
 */
export function attemptTimeoutMs(timeoutMs: number, waitMs: number | undefined): number {
  return timeoutMs + Math.min(Math.max(0, waitMs ?? 0), serverMaxWaitMs);
}

export interface ListQuery {
  /** 1 to 500, default 100. */
  limit?: number;
  /** The nextCursor of the previous page. */
  cursor?: string;
}
/** A state filter: one state or several (sent comma-separated). */
export interface StateListQuery<State extends string> extends ListQuery {
  state?: State | readonly State[];
}
export type BarrierState = Out<S['barrierView']>['state'];
export type MessageState = Out<S['messageView']>['state'];
export type TaskState = Out<S['taskView']>['state'];
export type GroupState = GroupView['state'];
export interface TaskListQuery extends StateListQuery<TaskState> {
  scopeId?: string;
}
export interface EventsQuery {
  /** The nextCursor of the previous read; absent reads from the start of the journal. */
  cursor?: string;
  limit?: number;
}
export type ClaimState = ClaimView['state'];
export interface ClaimListQuery extends StateListQuery<ClaimState> {
  claimKey?: string;
  scopeId?: string;
}
export type TimerState = TimerView['state'];
export interface TimerListQuery extends StateListQuery<TimerState> {
  scopeId?: string;
}
export interface GetBarrierOptions extends CallOptions {
  /** Wait on this epoch: the server answers at once when the barrier is in another one. */
  epoch?: number;
}

/** The whole API of a space. Extends the seams of contract.ts, so the compiler checks what worker.ts, groups.ts, claims.ts, timers.ts and runs.ts rely on. */
export interface BatonClient extends WorkerApi, TaskGroupApi, ClaimApi, TimerApi, RunApi {
  readonly spaceId: string;

  // Budgets
  /** GET /budgets */
  listBudgets(query?: ListQuery, options?: CallOptions): Promise<Out<S['budgetPage']>>;
  /** POST /budgets: create-or-get by name (an identical budget answers the existing one). */
  createBudget(body: In<S['budgetCreateBody']>, options?: CallOptions): Promise<Out<S['budgetView']>>;
  /** GET /budgets/{id} */
  getBudget(budgetId: string, options?: CallOptions): Promise<Out<S['budgetView']>>;
  /** POST /budgets/{id}/reserve */
  reserve(budgetId: string, body: In<S['reserveBody']>, options?: CallOptions): Promise<Out<S['reservationView']>>;
  /** POST /budgets/{id}/settle */
  settle(budgetId: string, body: In<S['settleBody']>, options?: CallOptions): Promise<Out<S['entryReply']>>;
  /** POST /budgets/{id}/void (`void` is a keyword, hence the name). */
  voidReservation(budgetId: string, body: In<S['voidBody']>, options?: CallOptions): Promise<Out<S['entryReply']>>;

  // Barriers
  /** GET /barriers?state= */
  listBarriers(query?: StateListQuery<BarrierState>, options?: CallOptions): Promise<Out<S['barrierPage']>>;
  /** POST /barriers: every create makes a new barrier; the Idempotency-Key makes a retry safe. */
  createBarrier(body: In<S['barrierCreateBody']>, options?: CallOptions): Promise<Out<S['barrierView']>>;
  /** GET /barriers/{id}?waitMs=&epoch=: a long poll until the barrier (in `epoch`) leaves WAITING. */
  getBarrier(barrierId: string, waitMs?: number, options?: GetBarrierOptions): Promise<Out<S['barrierView']>>;
  /** POST /barriers/{id}/arrive */
  arrive(barrierId: string, body: In<S['arriveBody']>, options?: CallOptions): Promise<Out<S['arriveReply']>>;
  /** POST /barriers/{id}/nextEpoch; `{epoch}` names the epoch to end, so many callers start one epoch. */
  nextEpoch(barrierId: string, body?: In<S['nextEpochBody']>, options?: CallOptions): Promise<Out<S['barrierView']>>;
  /** POST /barriers/{id}/cancel */
  cancelBarrier(barrierId: string, options?: CallOptions): Promise<Out<S['barrierView']>>;

  // Pools and work limits
  /** GET /pools */
  listPools(query?: ListQuery, options?: CallOptions): Promise<Out<S['poolPage']>>;
  /** POST /pools: create-or-get by name. */
  createPool(body: In<S['poolCreateBody']>, options?: CallOptions): Promise<Out<S['poolView']>>;
  /** GET /pools/{id} */
  getPool(poolId: string, options?: CallOptions): Promise<Out<S['poolView']>>;
  /** GET /work-limits */
  listWorkLimits(query?: ListQuery, options?: CallOptions): Promise<Out<S['workLimitPage']>>;
  /** POST /work-limits: create-or-get by name. */
  createWorkLimit(body: In<S['workLimitCreateBody']>, options?: CallOptions): Promise<Out<S['workLimitView']>>;
  /** GET /work-limits/{id} */
  getWorkLimit(workLimitId: string, options?: CallOptions): Promise<Out<S['workLimitView']>>;

  // Allowances and their waiters
  /** GET /allowances */
  listAllowances(query?: ListQuery, options?: CallOptions): Promise<Out<S['allowancePage']>>;
  /** POST /allowances: create-or-get by name. */
  createAllowance(body: In<S['allowanceCreateBody']>, options?: CallOptions): Promise<Out<S['allowanceView']>>;
  /** GET /allowances/{id} */
  getAllowance(allowanceId: string, options?: CallOptions): Promise<Out<S['allowanceView']>>;
  /** POST /allowances/{id}/consume; refused with 429 QUOTA_EXHAUSTED (not retried: wait in line instead). */
  consume(allowanceId: string, body: In<S['consumeBody']>, options?: CallOptions): Promise<Out<S['consumptionView']>>;
  /** POST /allowances/{id}/wait: joins the FIFO line. */
  wait(allowanceId: string, body: In<S['waitBody']>, options?: CallOptions): Promise<Out<S['waiterView']>>;
  /** POST /allowances/{id}/cooldown */
  cooldown(allowanceId: string, body: In<S['cooldownBody']>, options?: CallOptions): Promise<Out<S['allowanceView']>>;
  /** GET /allowance-waiters/{id}?waitMs=: a long poll while WAITING. */
  getWaiter(waiterId: string, waitMs?: number, options?: CallOptions): Promise<Out<S['waiterView']>>;
  /** POST /allowance-waiters/{id}/cancel */
  cancelWaiter(waiterId: string, options?: CallOptions): Promise<Out<S['waiterView']>>;

  // Mailboxes and messages
  /** GET /mailboxes */
  listMailboxes(query?: ListQuery, options?: CallOptions): Promise<Out<S['mailboxPage']>>;
  /** POST /mailboxes: create-or-get by name. */
  createMailbox(body: In<S['mailboxCreateBody']>, options?: CallOptions): Promise<Out<S['mailboxView']>>;
  /** GET /mailboxes/{id}/messages?state= */
  listMessages(mailboxId: string, query?: StateListQuery<MessageState>, options?: CallOptions): Promise<Out<S['messagePage']>>;
  /** POST /mailboxes/{id}/messages */
  send<P = unknown>(mailboxId: string, body: SendBody<P>, options?: CallOptions): Promise<MessageView<P>>;
  /** POST /mailboxes/{id}/recv: null for 204 (nothing READY after the wait). The raw bypass of admission. */
  recv<P = unknown>(mailboxId: string, body: In<S['recvBody']>, options?: CallOptions): Promise<DeliveryView<P> | null>;
  /** POST /messages/{id}/renew */
  renew(messageId: string, body: In<S['renewBody']>, options?: CallOptions): Promise<Out<S['renewReply']>>;
  /** POST /messages/{id}/complete */
  complete(messageId: string, body: In<S['completeBody']>, options?: CallOptions): Promise<Out<S['completeReply']>>;
  /** POST /messages/{id}/nack */
  nack(messageId: string, body: In<S['nackBody']>, options?: CallOptions): Promise<Out<S['nackReply']>>;
  /** POST /mailboxes/{id}/messages/send-batch: each message answered as send would, in order. */
  sendBatch<P = unknown>(mailboxId: string, body: SendBatchBody<P>, options?: CallOptions): Promise<CreatedItemReply<MessageView<P>>[]>;
  /** POST /mailboxes/{id}/recv-batch: up to maxMessages claimed in FIFO order; [] for 204. */
  recvBatch<P = unknown>(mailboxId: string, body: In<S['recvBatchBody']>, options?: CallOptions): Promise<DeliveryView<P>[]>;
  /** POST /messages/complete-batch: each item answered as complete would, in order; a failed item does not fail the call. */
  completeBatch(body: In<S['completeBatchBody']>, options?: CallOptions): Promise<BatchItemReply<Out<S['completeReply']>>[]>;
  /** POST /messages/nack-batch */
  nackBatch(body: In<S['nackBatchBody']>, options?: CallOptions): Promise<BatchItemReply<Out<S['nackReply']>>[]>;
  /** POST /messages/renew-batch */
  renewBatch(body: In<S['renewBatchBody']>, options?: CallOptions): Promise<BatchItemReply<Out<S['renewReply']>>[]>;

  // Tasks
  /** GET /tasks?scopeId=&state= */
  listTasks(query?: TaskListQuery, options?: CallOptions): Promise<Out<S['taskPage']>>;
  /** POST /tasks: create-or-join by taskKey. */
  submitTask<I = unknown>(body: TaskSubmitBody<I>, options?: CallOptions): Promise<Out<S['taskSubmitReply']>>;
  /** POST /tasks/submit-batch: each task answered as submitTask would, in order (helpers.ts submitMany chunks any number). */
  submitBatch<I = unknown>(body: SubmitBatchBody<I>, options?: CallOptions): Promise<CreatedItemReply<Out<S['taskSubmitReply']>>[]>;
  /** GET /tasks/{id}?waitMs=: with `waitMs`, a long poll until the task is in a final state (the server caps the wait at 30,000 ms). */
  getTask<I = unknown, O = unknown>(taskId: string, options?: GetTaskOptions): Promise<TaskView<I, O>>;
  /** POST /tasks/{id}/cancel */
  cancelTask(taskId: string, body?: In<S['taskCancelBody']>, options?: CallOptions): Promise<Out<S['taskStateReply']>>;
  /** POST /tasks/{id}/join */
  joinTask(taskId: string, body: In<S['taskJoinBody']>, options?: CallOptions): Promise<Out<S['taskStateReply']>>;
  /** POST /tasks/{id}/detach */
  detachTask(taskId: string, body: In<S['taskDetachBody']>, options?: CallOptions): Promise<Out<S['taskDetachReply']>>;
  /**
   * POST /tasks/admit: a task delivery with everything it requires, or null for 204. Pass the
   * same `idempotencyKey` to retry one intended claim across calls (an empty admit stores nothing).
   */
  admit<I = unknown>(body: In<S['admitBody']>, options?: CallOptions): Promise<Admitted<I> | null>;
  /** POST /tasks/admit-batch: admit's rule up to maxTasks times in one call; [] for 204. Keep `idempotencyKey` across retries of one intended claim, as for admit. */
  admitBatch<I = unknown>(body: In<S['admitBatchBody']>, options?: CallOptions): Promise<Admitted<I>[]>;
  /** GET /ops/tasks/{taskId}: the debugger view (usage_read). */
  getTaskDebug(taskId: string, options?: CallOptions): Promise<Out<S['taskDebugView']>>;

  // Task groups
  /** GET /task-groups?state=: oldest first, each with its members. */
  listGroups(query?: StateListQuery<GroupState>, options?: CallOptions): Promise<Out<S['groupPage']>>;
  /** POST /task-groups: every create makes a new group; the Idempotency-Key makes a retry (or a rerun, when you pass one) safe. */
  createGroup(body: In<S['groupCreateBody']>, options?: CallOptions): Promise<Out<S['groupCreatedReply']>>;
  /** GET /task-groups/{id}?waitMs=: a long poll until the group is DECIDED (the server caps the wait at 30,000 ms). */
  getGroup(groupId: string, waitMs?: number, options?: CallOptions): Promise<GroupView>;
  /** POST /task-groups/{id}/tasks: create-or-join a member task by taskKey (`created: false` for a member already). */
  createMemberTask<I = unknown>(groupId: string, body: MemberTaskBody<I>, options?: CallOptions): Promise<Out<S['memberTaskReply']>>;
  /** POST /task-groups/{id}/join-task: joins an outside task that is in no group; answers the group. */
  joinGroup(groupId: string, body: In<S['joinTaskBody']>, options?: CallOptions): Promise<GroupView>;
  /** POST /task-groups/{id}/tasks/{taskId}/accept: needs the member SUCCEEDED; idempotent; a verdict is final. */
  acceptMember(groupId: string, taskId: string, options?: CallOptions): Promise<Out<S['verdictReply']>>;
  /** POST /task-groups/{id}/tasks/{taskId}/reject: needs the member terminal; idempotent; a verdict is final. */
  rejectMember(groupId: string, taskId: string, options?: CallOptions): Promise<Out<S['verdictReply']>>;
  /** POST /task-groups/{id}/close: closes membership and decides if it can; idempotent. */
  closeGroup(groupId: string, options?: CallOptions): Promise<GroupView>;
  /** POST /task-groups/{id}/seal: close under its former name, but 409 CONFLICT on a group that is not OPEN. */
  sealGroup(groupId: string, options?: CallOptions): Promise<GroupView>;

  // Runs (docs/design/0019-runs.md)
  /** POST /runs: create (201) or the same run again (200); a child of parentScopeId when given. */
  createRun(body: In<S['runCreateBody']>, options?: CallOptions): Promise<Out<S['runView']>>;
  /** GET /runs/{scopeId}: the run, a page of its child runs and counts of what lives under it. */
  getRun(scopeId: string, query?: { limit?: number; cursor?: string }, options?: CallOptions): Promise<Out<S['runDetailView']>>;
  /** POST /runs/{scopeId}/complete: idempotent. */
  completeRun(scopeId: string, options?: CallOptions): Promise<Out<S['runView']>>;
  /** POST /runs/{scopeId}/cancel: idempotent; cancels child runs and live tasks under it (`cascading` until done). */
  cancelRun(scopeId: string, options?: CallOptions): Promise<Out<S['runView']>>;

  // Claims (docs/design/0020-claims.md)
  /** POST /claims: 201 a new claim with its token and fencing token; 200 the same claim for the same holder and holderSession; 409 CLAIM_HELD (details: holder, leaseExpiresAt) while another holds the key. */
  acquireClaim(body: In<S['claimCreateBody']>, options?: CallOptions): Promise<ClaimGrant>;
  /** GET /claims/{id} (never shows the token). */
  getClaim(claimId: string, options?: CallOptions): Promise<ClaimView>;
  /** GET /claims?claimKey=&scopeId=&state=: oldest first. */
  listClaims(query?: ClaimListQuery, options?: CallOptions): Promise<Out<S['claimPage']>>;
  /** POST /claims/{id}/renew: extends the lease to now + leaseSeconds; 409 LEASE_LOST once the token is not the live claim's. */
  renewClaim(claimId: string, body: In<S['claimRenewBody']>, options?: CallOptions): Promise<ClaimView>;
  /** POST /claims/{id}/release: RELEASED, the key free at once; a repeat is 409 LEASE_LOST. */
  releaseClaim(claimId: string, body: In<S['claimReleaseBody']>, options?: CallOptions): Promise<ClaimView>;

  // Timers (docs/design/0021-timers.md)
  /** POST /timers: 201 ARMED; 200 the timer for a repeat of timerKey with the same body. Fires `payload` into the mailbox as a message with workKey timer:<id>. */
  armTimer(body: In<S['timerArmBody']>, options?: CallOptions): Promise<TimerView>;
  /** GET /timers/{id} */
  getTimer(timerId: string, options?: CallOptions): Promise<TimerView>;
  /** GET /timers?state=&scopeId=: oldest first. */
  listTimers(query?: TimerListQuery, options?: CallOptions): Promise<Out<S['timerPage']>>;
  /** POST /timers/{id}/cancel: idempotent on a CANCELLED timer; 409 CONFLICT on a FIRED one. */
  cancelTimer(timerId: string, options?: CallOptions): Promise<TimerView>;

  // Space limits and the journal
  /** GET /limits (usage_read) */
  getLimits(options?: CallOptions): Promise<Out<S['spaceLimitsView']>>;
  /** PUT /limits: sets the limits the body names, keeps the others. */
  setLimits(body: In<S['spaceLimitsBody']>, options?: CallOptions): Promise<Out<S['spaceLimitsView']>>;
  /** GET /usage (usage_read): the organization's operations this month, load and request rate against its plan. */
  getUsage(options?: CallOptions): Promise<Out<S['usageView']>>;
  /** GET /events?cursor=&limit=: nextCursor is never null; keep polling with it. */
  listEvents(query?: EventsQuery, options?: CallOptions): Promise<Out<S['eventPage']>>;
  /** GET /watch: one filtered page, a long poll of up to waitSeconds. client.watch follows it for you. */
  watchEvents(query?: WatchQuery, options?: CallOptions): Promise<Out<S['eventPage']>>;
  /** The filtered journal as an async iterator over GET /watch: resumes across errors and restarts (watch.ts). */
  watch(options?: WatchOptions): EventWatch;
}

type QueryValue = string | number | readonly string[] | undefined;

interface Route {
  method: TransportRequest['method'];
  /** Below /v1/spaces/{spaceId}; ids already encoded. */
  path: string;
  query?: Record<string, QueryValue>;
  body?: unknown;
  /** A long poll's wait: the attempt's timeout grows by it. */
  waitMs?: number;
  /** 204 answers null (admit, recv); on any other route a 204 is a BAD_REPLY. */
  emptyIsNull?: boolean;
}

const id = (value: string): string => encodeURIComponent(value);

function queryString(query: Record<string, QueryValue> | undefined): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined) continue;
    params.set(name, typeof value === 'object' ? value.join(',') : String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

function parseSuccess(response: TransportResponse, route: Route): unknown {
  if (response.status === 204 && route.emptyIsNull) return null;
  try {
    return JSON.parse(response.body);
  } catch (cause) {
    throw new BatonApiError({
      code: 'BAD_REPLY',
      status: response.status,
      message: `HTTP ${response.status} with a body that is not JSON`,
      requestId: response.headers['x-request-id'] ?? null,
      cause,
    });
  }
}

export function createClient(options: ClientOptions): BatonClient {
  const transport = options.transport ?? fetchTransport;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? systemRandom;
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
  const policy: RetryPolicy = { ...defaultRetryPolicy, ...options.retry };
  const newIdempotencyKey = options.newIdempotencyKey ?? (() => crypto.randomUUID());
  const spaceUrl = `${options.baseUrl.replace(/\/+$/, '')}/v1/spaces/${id(options.spaceId)}`;

  /**
   * One exchange under its own timeout. The caller's signal and the timeout abort the same
   * controller; listeners are removed afterwards rather than using AbortSignal.any, because a
   * worker's long-lived signal would otherwise collect one dependent signal per call. The
   * timeout runs on the injected clock so a simulated network can time out in simulated time.
   */
  async function exchange(request: Omit<TransportRequest, 'signal'>, attemptMs: number, signal: AbortSignal | undefined): Promise<TransportResponse> {
    const attempt = new AbortController();
    const timer = new AbortController();
    let timedOut = false;
    const onCallerAbort = (): void => attempt.abort(signal!.reason);
    signal?.addEventListener('abort', onCallerAbort, { once: true });
    // Also settles the race for a transport that ignores its signal.
    const aborted = new Promise<never>((_, reject) => attempt.signal.addEventListener('abort', () => reject(attempt.signal.reason), { once: true }));
    clock.sleep(attemptMs, timer.signal).then(
      () => {
        if (timer.signal.aborted) return; // a clock whose sleep resolves on abort: the attempt ended first
        timedOut = true;
        attempt.abort(timeoutError(attemptMs));
      },
      () => undefined, // the attempt ended first
    );
    try {
      return await Promise.race([transport({ ...request, signal: attempt.signal }), aborted]);
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (timedOut) throw timeoutError(attemptMs);
      throw networkError(error);
    } finally {
      timer.abort();
      signal?.removeEventListener('abort', onCallerAbort);
    }
  }

  async function call<T>(route: Route, callOptions: CallOptions = {}): Promise<T> {
    const headers: Record<string, string> = { authorization: `Bearer ${options.apiKey}`, accept: 'application/json' };
    let body: string | undefined;
    if (route.method !== 'GET') {
      // One key per logical call, reused by every retry: the server applies the call once.
      headers['idempotency-key'] = callOptions.idempotencyKey ?? newIdempotencyKey();
      headers['content-type'] = 'application/json';
      // Routes without a body still get "{}": the server reads any POST as JSON.
      body = JSON.stringify(route.body ?? {});
    }
    const request = { method: route.method, url: `${spaceUrl}${route.path}${queryString(route.query)}`, headers, ...(body === undefined ? {} : { body }) };
    const attemptMs = attemptTimeoutMs(callOptions.timeoutMs ?? timeoutMs, route.waitMs);
    const signal = callOptions.signal;
    return withRetry(
      async () => {
        const response = await exchange(request, attemptMs, signal);
        if (response.status < 200 || response.status >= 300 || (response.status === 204 && !route.emptyIsNull)) {
          throw errorFromReply(response, clock.now());
        }
        return parseSuccess(response, route) as T;
      },
      {
        policy,
        clock,
        random,
        ...(signal === undefined ? {} : { signal }),
        isRetryable,
        retryAfterMsOf: (error) => (error instanceof BatonApiError ? error.retryAfterMs : null),
      },
    );
  }

  const get = <T>(path: string, query: Record<string, QueryValue> | undefined, callOptions: CallOptions | undefined, waitMs?: number): Promise<T> =>
    call<T>({ method: 'GET', path, ...(query === undefined ? {} : { query }), ...(waitMs === undefined ? {} : { waitMs }) }, callOptions);
  const post = <T>(path: string, body: unknown, callOptions: CallOptions | undefined): Promise<T> => call<T>({ method: 'POST', path, body }, callOptions);
  const list = (query: ListQuery | undefined) => ({ limit: query?.limit, cursor: query?.cursor });
  const stateList = <State extends string>(query: StateListQuery<State> | undefined) => ({ ...list(query), state: query?.state });

  const client: BatonClient = {
    spaceId: options.spaceId,

    listBudgets: (query, o) => get('/budgets', list(query), o),
    createBudget: (body, o) => post('/budgets', body, o),
    getBudget: (budgetId, o) => get(`/budgets/${id(budgetId)}`, undefined, o),
    reserve: (budgetId, body, o) => post(`/budgets/${id(budgetId)}/reserve`, body, o),
    settle: (budgetId, body, o) => post(`/budgets/${id(budgetId)}/settle`, body, o),
    voidReservation: (budgetId, body, o) => post(`/budgets/${id(budgetId)}/void`, body, o),

    listBarriers: (query, o) => get('/barriers', stateList(query), o),
    createBarrier: (body, o) => post('/barriers', body, o),
    getBarrier: (barrierId, waitMs, o) => get(`/barriers/${id(barrierId)}`, { waitMs, epoch: o?.epoch }, o, waitMs),
    arrive: (barrierId, body, o) => post(`/barriers/${id(barrierId)}/arrive`, body, o),
    nextEpoch: (barrierId, body, o) => post(`/barriers/${id(barrierId)}/nextEpoch`, body ?? {}, o),
    cancelBarrier: (barrierId, o) => post(`/barriers/${id(barrierId)}/cancel`, undefined, o),

    listPools: (query, o) => get('/pools', list(query), o),
    createPool: (body, o) => post('/pools', body, o),
    getPool: (poolId, o) => get(`/pools/${id(poolId)}`, undefined, o),
    listWorkLimits: (query, o) => get('/work-limits', list(query), o),
    createWorkLimit: (body, o) => post('/work-limits', body, o),
    getWorkLimit: (workLimitId, o) => get(`/work-limits/${id(workLimitId)}`, undefined, o),

    listAllowances: (query, o) => get('/allowances', list(query), o),
    createAllowance: (body, o) => post('/allowances', body, o),
    getAllowance: (allowanceId, o) => get(`/allowances/${id(allowanceId)}`, undefined, o),
    consume: (allowanceId, body, o) => post(`/allowances/${id(allowanceId)}/consume`, body, o),
    wait: (allowanceId, body, o) => post(`/allowances/${id(allowanceId)}/wait`, body, o),
    cooldown: (allowanceId, body, o) => post(`/allowances/${id(allowanceId)}/cooldown`, body, o),
    getWaiter: (waiterId, waitMs, o) => get(`/allowance-waiters/${id(waiterId)}`, { waitMs }, o, waitMs),
    cancelWaiter: (waiterId, o) => post(`/allowance-waiters/${id(waiterId)}/cancel`, undefined, o),

    listMailboxes: (query, o) => get('/mailboxes', list(query), o),
    createMailbox: (body, o) => post('/mailboxes', body, o),
    listMessages: (mailboxId, query, o) => get(`/mailboxes/${id(mailboxId)}/messages`, stateList(query), o),
    send: (mailboxId, body, o) => post(`/mailboxes/${id(mailboxId)}/messages`, body, o),
    recv: (mailboxId, body, o) => call({ method: 'POST', path: `/mailboxes/${id(mailboxId)}/recv`, body, ...waitOf(body), emptyIsNull: true }, o),
    renew: (messageId, body, o) => post(`/messages/${id(messageId)}/renew`, body, o),
    complete: (messageId, body, o) => post(`/messages/${id(messageId)}/complete`, body, o),
    nack: (messageId, body, o) => post(`/messages/${id(messageId)}/nack`, body, o),
    sendBatch: async (mailboxId, body, o) => itemsOf(await post(`/mailboxes/${id(mailboxId)}/messages/send-batch`, body, o)),
    recvBatch: async (mailboxId, body, o) =>
      itemsOf(await call({ method: 'POST', path: `/mailboxes/${id(mailboxId)}/recv-batch`, body, ...waitOf(body), emptyIsNull: true }, o)),
    completeBatch: async (body, o) => itemsOf(await post('/messages/complete-batch', body, o)),
    nackBatch: async (body, o) => itemsOf(await post('/messages/nack-batch', body, o)),
    renewBatch: async (body, o) => itemsOf(await post('/messages/renew-batch', body, o)),

    listTasks: (query, o) => get('/tasks', { ...stateList(query), scopeId: query?.scopeId }, o),
    submitTask: (body, o) => post('/tasks', body, o),
    submitBatch: async (body, o) => itemsOf(await post('/tasks/submit-batch', body, o)),
    getTask: (taskId, o) => get(`/tasks/${id(taskId)}`, o?.waitMs === undefined ? undefined : { waitMs: o.waitMs }, o, o?.waitMs),
    cancelTask: (taskId, body, o) => post(`/tasks/${id(taskId)}/cancel`, body ?? {}, o),
    joinTask: (taskId, body, o) => post(`/tasks/${id(taskId)}/join`, body, o),
    detachTask: (taskId, body, o) => post(`/tasks/${id(taskId)}/detach`, body, o),
    admit: (body, o) => call({ method: 'POST', path: '/tasks/admit', body, ...waitOf(body), emptyIsNull: true }, o),
    admitBatch: async (body, o) => itemsOf(await call({ method: 'POST', path: '/tasks/admit-batch', body, ...waitOf(body), emptyIsNull: true }, o)),
    getTaskDebug: (taskId, o) => get(`/ops/tasks/${id(taskId)}`, undefined, o),

    listGroups: (query, o) => get('/task-groups', stateList(query), o),
    createGroup: (body, o) => post('/task-groups', body, o),
    getGroup: (groupId, waitMs, o) => get(`/task-groups/${id(groupId)}`, { waitMs }, o, waitMs),
    createMemberTask: (groupId, body, o) => post(`/task-groups/${id(groupId)}/tasks`, body, o),
    joinGroup: (groupId, body, o) => post(`/task-groups/${id(groupId)}/join-task`, body, o),
    acceptMember: (groupId, taskId, o) => post(`/task-groups/${id(groupId)}/tasks/${id(taskId)}/accept`, undefined, o),
    rejectMember: (groupId, taskId, o) => post(`/task-groups/${id(groupId)}/tasks/${id(taskId)}/reject`, undefined, o),
    closeGroup: (groupId, o) => post(`/task-groups/${id(groupId)}/close`, undefined, o),
    createRun: (body, o) => post('/runs', body, o),
    getRun: (scopeId, query, o) => get(`/runs/${id(scopeId)}`, { limit: query?.limit, cursor: query?.cursor }, o),
    completeRun: (scopeId, o) => post(`/runs/${id(scopeId)}/complete`, undefined, o),
    cancelRun: (scopeId, o) => post(`/runs/${id(scopeId)}/cancel`, undefined, o),
    sealGroup: (groupId, o) => post(`/task-groups/${id(groupId)}/seal`, undefined, o),

    acquireClaim: (body, o) => post('/claims', body, o),
    getClaim: (claimId, o) => get(`/claims/${id(claimId)}`, undefined, o),
    listClaims: (query, o) => get('/claims', { ...stateList(query), claimKey: query?.claimKey, scopeId: query?.scopeId }, o),
    renewClaim: (claimId, body, o) => post(`/claims/${id(claimId)}/renew`, body, o),
    releaseClaim: (claimId, body, o) => post(`/claims/${id(claimId)}/release`, body, o),

    armTimer: (body, o) => post('/timers', body, o),
    getTimer: (timerId, o) => get(`/timers/${id(timerId)}`, undefined, o),
    listTimers: (query, o) => get('/timers', { ...stateList(query), scopeId: query?.scopeId }, o),
    cancelTimer: (timerId, o) => post(`/timers/${id(timerId)}/cancel`, undefined, o),

    getLimits: (o) => get('/limits', undefined, o),
    setLimits: (body, o) => call({ method: 'PUT', path: '/limits', body }, o),
    getUsage: (o) => get('/usage', undefined, o),
    listEvents: (query, o) => get('/events', { cursor: query?.cursor, limit: query?.limit }, o),
    watchEvents: (query, o) =>
      get('/watch', { cursor: query?.cursor, types: query?.types, aggregate: query?.aggregate, scopeId: query?.scopeId, limit: query?.limit, waitSeconds: query?.waitSeconds }, o, (query?.waitSeconds ?? 0) * 1000),
    watch: (watchOptions = {}) => createWatch({ page: (query, o) => client.watchEvents(query, o), clock, random, policy }, watchOptions),
  };
  return client;
}

/** A batch reply's items; a 204 (null) is none. */
function itemsOf<T>(reply: { items: T[] } | null): T[] {
  return reply?.items ?? [];
}

/** recv and admit carry their long-poll wait in the body. */
function waitOf(body: { waitMs?: number }): { waitMs?: number } {
  return body.waitMs === undefined ? {} : { waitMs: body.waitMs };
}

// The seams worker.ts, helpers.ts, groups.ts, claims.ts, timers.ts and runs.ts are written against: a client must be all of them.
createClient satisfies (options: ClientOptions) => WorkerApi & TaskGroupApi & ClaimApi & TimerApi & RunApi;
