import { randomUUID } from 'node:crypto';
import { systemClock, systemRandom, type RuntimeClock, type RuntimeRandom } from './clock';
import type { TaskPayload } from './api-types';
import type { Admitted, ApiErrorShape, BatchItemReply, CallOptions, WorkerApi } from './contract';
import { Flusher, withdrawn, type FlusherOptions, type ItemResult } from './flusher';
import { consoleLogger, type WorkerLogger } from './logger';

/**
 * The worker loop: admit task deliveries with long polls, run a handler for each under a
 * renewed lease, then complete or nack with the delivery's token. Built on WorkerApi alone, so
 * it runs against the real client, the simulator or an in-memory fake.
 *
 * One rule shapes everything below: a token is used only while this worker still believes it
 * holds the lease. Once the lease is lost (renew answered LEASE_LOST, or the local deadline
 * passed before a renew succeeded) or the delivery was handed back by a drain, the worker
 * sends nothing more for that delivery, whatever its handler does later.
 */

// ---------------------------------------------------------------------------------------------
// Errors, kept structural: the worker runs on any WorkerApi, not only the HTTP client.


/** An error the API answered (or the client's NETWORK error), recognised by shape. */
function isApiError(error: unknown): error is ApiErrorShape {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { code?: unknown; status?: unknown };
  return typeof e.code === 'string' && typeof e.status === 'number';
}

function hasApiCode(error: unknown, code: string): boolean {
  return isApiError(error) && error.code === code;
}

/** What a log line names a failure by: the API's code, else the error's name (a handler's TypeError, say). */
function failureFields(error: unknown): { code?: string; status?: number; error?: string } {
  if (isApiError(error)) return { code: error.code, status: error.status, error: error.message };
  if (error instanceof Error) return { code: error.name, error: error.message };
  return error === undefined ? {} : { error: String(error) };
}

/**
 * Admit answers that retrying cannot fix (a malformed request, a key refused or lacking a
 * permission, an unknown mailbox or space): the worker stops on them rather than retry forever.
 */
const fatalAdmitStatuses: ReadonlyMap<number, string> = new Map([
  [400, 'the admit request is invalid: check scopeId (a UUID, e.g. BATON_SCOPE) and mailboxId'],
  [401, 'the API key was not accepted: check BATON_KEY'],
  [403, 'the API key may not admit here: it needs coordination_write in this space (check BATON_KEY and BATON_SPACE)'],
  [404, 'the mailbox or the space does not exist: check mailboxId and BATON_SPACE'],
]);

/** Why a worker stopped by itself: admit answered an error that will not fix itself. Its `cause` is the API error. */
export class WorkerStoppedError extends Error {
  override name = 'WorkerStoppedError';
  constructor(
    readonly code: string,
    readonly status: number,
    hint: string,
    cause: unknown,
  ) {
    super(`worker stopped: admit answered ${status} ${code}${cause instanceof Error && cause.message && cause.message !== code ? ` (${cause.message})` : ''}; ${hint}`, { cause });
  }
}

/** Sleeps, treating an abort as "wake up now": callers re-check their state after waking. */
async function sleepQuietly(clock: RuntimeClock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return;
  try {
    await clock.sleep(Math.max(0, ms), signal);
  } catch {
    // Aborted: the caller's loop condition decides what happens next.
  }
}

// ---------------------------------------------------------------------------------------------
// Telling the worker how a handler failed.

const nonRetryableMark = Symbol.for('baton.nonRetryable');

/** Thrown by a handler when retrying cannot help (bad input, ...): the delivery is nacked with retry false. */
export class PermanentError extends Error {
  override name = 'PermanentError';
  readonly [nonRetryableMark] = true;
}

/** Marks any error as permanent without wrapping it; returns it, so `throw nonRetryable(e)` reads well. */
export function nonRetryable<E>(error: E): E {
  if (typeof error === 'object' && error !== null) (error as Record<symbol, unknown>)[nonRetryableMark] = true;
  return error;
}

export function isPermanent(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[nonRetryableMark] === true;
}

/** The reason a handler's signal aborts with. */
export class DeliveryAbortedError extends Error {
  override name = 'DeliveryAbortedError';
  constructor(
    readonly messageId: string,
    readonly why: 'lease_lost' | 'drain',
  ) {
    super(why === 'lease_lost' ? `lease on message ${messageId} was lost` : `worker drained before message ${messageId} finished`);
  }
}

// ---------------------------------------------------------------------------------------------
// Public shapes.

/**
 * What a handler sees of an admitted delivery, `I` the task's input (the caller's word: the
 * server stores any JSON). The token stays inside the worker on purpose.
 */
export interface WorkerDelivery<I = unknown> {
  messageId: string;
  taskId: string;
  mailboxId: string;
  scopeId: string;
  /** 1 on the first claim; higher after nacks with retry or lease expiries. */
  attempt: number;
  /** The task delivery's payload, `{taskId, input}`. */
  payload: TaskPayload<I>;
  /** `payload.input`: what the submitter passed. */
  input: I;
  /** What admission claimed with the delivery (pools, quotas, budget reservations, work limit). */
  claimed: Admitted['claimed'];
}

export interface HandlerContext<I = unknown> {
  delivery: WorkerDelivery<I>;
  /** Aborts when the lease is lost or a drain hands the delivery back; stop work when it does. */
  signal: AbortSignal;
}

/** Return a value to complete with it as the task's outcome (`O`); throw to nack. */
export type DeliveryHandler<I = unknown, O = unknown> = (context: HandlerContext<I>) => O | Promise<O>;

export type WorkerEvent<I = unknown> =
  | { type: 'admitted'; delivery: WorkerDelivery<I> }
  | { type: 'renewed'; messageId: string; taskId: string; leaseExpiresAt: string }
  | { type: 'completed'; messageId: string; taskId: string }
  | { type: 'failed'; messageId: string; taskId: string; retry: boolean; reason: 'handler' | 'drain'; error?: unknown }
  | { type: 'lease_lost'; messageId: string; taskId: string; cause: 'LEASE_LOST' | 'EXPIRED' }
  | { type: 'error'; stage: 'admit' | 'renew' | 'complete' | 'nack'; error: unknown; messageId?: string; retryInMs?: number }
  | { type: 'stopped' };

export interface WorkerStats {
  admitted: number;
  completed: number;
  /** Nacked: by a handler's failure or by a drain. */
  failed: number;
  leaseLost: number;
  /** Handlers running now (a handler that ignores its aborted signal still counts until it returns). */
  inFlight: number;
}

/** `I` is the input of the tasks this worker admits and `O` the outcome its handler completes them with. */
export interface WorkerOptions<I = unknown, O = unknown> {
  client: WorkerApi;
  mailboxId: string;
  scopeId: string;
  holder: string;
  /** Handlers run at most this many at once; the worker admits only when one is free. */
  concurrency: number;
  /** Asked for on admit and every renew (the server may shorten it to maxLeaseSeconds). */
  leaseSeconds: number;
  /** The admit long poll; the server caps it at 30,000. Default 20,000. */
  waitMs?: number;
  handler: DeliveryHandler<I, O>;
  clock?: RuntimeClock;
  random?: RuntimeRandom;
  onEvent?: (event: WorkerEvent<I>) => void;
  /**
   * Where the worker says what it does (started, each failure with its code, backoff, lease
   * lost, drain): any pino-compatible logger. Default: one line per entry on the console
   * (consoleLogger); silentLogger says nothing.
   */
  logger?: WorkerLogger;
  /** Backoff after a failed admit: ceiling of the first, doubling up to maxMs. */
  admitBackoff?: { baseMs: number; maxMs: number };
  /** Call installSignalHandlers() on start (SIGTERM and SIGINT drain with this deadline). */
  handleSignals?: boolean | { deadlineMs: number };
  /**
   * On by default: admit with admit-batch up to the free slots (never more: an admitted delivery
   * is leased), and send completes, nacks and renewals through batch requests (flusher.ts). A
   * handler's delivery counts as done only once the request carrying its complete answered.
   * false: one request per delivery and step, on the single routes. See defaultBatching.
   */
  batching?: false | Partial<FlusherOptions>;
}

export interface Worker {
  /** Identifies this instance's claims (recorded on each claim); fresh per createWorker. */
  readonly holderSession: string;
  start(): void;
  /**
   * Stops admitting, lets in-flight handlers finish until the deadline, nacks (retry) the rest.
   * Rejects with a WorkerStoppedError when the worker had stopped by itself (see `done`).
   */
  stop(options?: { deadlineMs?: number }): Promise<void>;
  /** A snapshot of the counters. */
  readonly stats: WorkerStats;
  /**
   * Resolves once a stop has finished (never before stop is called). Rejects with a
   * WorkerStoppedError when admit answered 400, 401, 403 or 404, which no retry fixes: the worker
   * then drains and stops by itself. Await it (or catch it): left unawaited, the rejection ends
   * the process with the error, which beats a worker that silently does nothing.
   */
  readonly done: Promise<void>;
  /** Drains on SIGTERM and SIGINT; returns a function that removes the hooks. */
  installSignalHandlers(options?: { deadlineMs?: number; signals?: NodeJS.Signals[] }): () => void;
}

/**
 * Batching defaults, chosen by measurement (docs/benchmarks.md, "Batches"): up to 100 items per
 * request (the server's limit), a flush as soon as the event loop turns (0 ms), and two requests
 * of a kind in flight, while which the next batch gathers.
 */
export const defaultBatching: FlusherOptions = { maxItems: 100, delayMs: 0, maxInFlight: 2 };

export const defaultAdmitWaitMs = 20_000;
export const defaultDrainDeadlineMs = 30_000;
const defaultAdmitBackoff = { baseMs: 500, maxMs: 30_000 };
/** An empty admit answered this fast (a draining server, waitMs 0) would otherwise spin the loop. */
const emptyAdmitPauseMs = 1_000;
/** The shortest wait before retrying a failed renew; the lease deadline still bounds the retries. */
const minRenewRetryMs = 250;

// ---------------------------------------------------------------------------------------------
// One delivery's life inside the worker.

type RunState =
  /** The handler runs and the lease is renewed. */
  | 'running'
  /** The handler returned; complete or nack is on its way. */
  | 'finishing'
  /** Lease lost: nothing more is sent. */
  | 'lost'
  /** A drain took it back: a nack with retry is on its way, and nothing else is sent. */
  | 'abandoned'
  | 'done';

interface Run<I = unknown> {
  delivery: WorkerDelivery<I>;
  token: string;
  state: RunState;
  /** Local deadline of the lease and when to renew it, on the worker's clock. */
  deadlineMs: number;
  renewAtMs: number;
  /** Aborted the moment the run leaves 'running': stops the renewer, the expiry watch and a renew in flight. */
  leaseEnd: AbortController;
  /** The handler's signal: aborted on lease loss or drain only. */
  handlerAbort: AbortController;
  /** Resolves when the worker has nothing more to send for this delivery. */
  settled: Promise<void>;
  markSettled: () => void;
}

/** Where the caller's word for the input is taken: the server sends `{taskId, input}`, any JSON as input. */
function toWorkerDelivery<I>(admitted: Admitted): WorkerDelivery<I> {
  const payload = admitted.payload as TaskPayload<I>;
  const input = (typeof payload === 'object' && payload !== null && 'input' in payload ? payload.input : undefined) as I;
  return {
    messageId: admitted.messageId,
    taskId: admitted.taskId,
    mailboxId: admitted.mailboxId,
    scopeId: admitted.scopeId,
    attempt: admitted.attempt,
    payload,
    input,
    claimed: admitted.claimed,
  };
}

/**
 * The local lease deadline: the earlier of the server's leaseExpiresAt and "reply received +
 * what we asked for". The second bounds the damage of a client clock running behind the
 * server's; a clock running ahead makes the first early. Both err towards stopping before the
 * server would give the delivery to someone else.
 */
function leaseDeadlineMs(leaseExpiresAt: string, receivedAtMs: number, leaseSeconds: number): number {
  const expiresAtMs = Date.parse(leaseExpiresAt);
  const askedMs = receivedAtMs + leaseSeconds * 1000;
  return Number.isNaN(expiresAtMs) ? askedMs : Math.min(expiresAtMs, askedMs);
}

/** Renew a third of the way into the lease: two more tries fit before it runs out. */
function renewAtMs(receivedAtMs: number, deadlineMs: number): number {
  return receivedAtMs + Math.max(0, deadlineMs - receivedAtMs) / 3;
}

/** A single route's call as a flush answers it: its reply, or the error it threw. */
async function resultOf<T>(call: Promise<T>): Promise<ItemResult<T>> {
  try {
    return { ok: true, value: await call };
  } catch (error) {
    return { ok: false, error };
  }
}

/** A batch reply's items as results: 200 is the single route's reply, anything else its error envelope. */
function resultsOf<T>(replies: BatchItemReply<T>[]): ItemResult<T>[] {
  return replies.map((reply) => {
    if (reply.status === 200) return { ok: true, value: reply.body as T };
    const { error } = reply.body as { error: Omit<ApiErrorShape, 'status'> };
    return { ok: false, error: { ...error, status: reply.status } satisfies ApiErrorShape };
  });
}

type CompleteItem = Parameters<WorkerApi['complete']>[1] & { messageId: string };
type NackItem = Parameters<WorkerApi['nack']>[1] & { messageId: string };
type RenewItem = Parameters<WorkerApi['renew']>[1] & { messageId: string };

/**
 * How the worker ends and renews its deliveries: through flushers of batch requests, or one
 * single-route call each (batching off). The renew's signal only reaches a single call: a batch
 * carries other deliveries' renewals too, so an aborted run ignores its answer instead.
 */
function deliverySteps(client: WorkerApi, clock: RuntimeClock, batching: FlusherOptions | null) {
  const without = ({ messageId: _, ...body }: { messageId: string }) => body;
  if (batching === null) {
    const unlessWithdrawn = <T>(stillWanted: () => boolean, send: () => Promise<T>): Promise<ItemResult<T>> => (stillWanted() ? resultOf(send()) : Promise.resolve(withdrawn));
    return {
      complete: (item: CompleteItem, stillWanted: () => boolean) => unlessWithdrawn(stillWanted, () => client.complete(item.messageId, without(item) as Parameters<WorkerApi['complete']>[1])),
      nack: (item: NackItem, stillWanted: () => boolean) => unlessWithdrawn(stillWanted, () => client.nack(item.messageId, without(item) as Parameters<WorkerApi['nack']>[1])),
      renew: (item: RenewItem, options: CallOptions) => resultOf(client.renew(item.messageId, without(item) as Parameters<WorkerApi['renew']>[1], options)),
    };
  }
  const completes = new Flusher<CompleteItem, Awaited<ReturnType<WorkerApi['complete']>>>(async (items) => resultsOf(await client.completeBatch({ items })), clock, batching);
  const nacks = new Flusher<NackItem, Awaited<ReturnType<WorkerApi['nack']>>>(async (items) => resultsOf(await client.nackBatch({ items })), clock, batching);
  const renewals = new Flusher<RenewItem, Awaited<ReturnType<WorkerApi['renew']>>>(async (items) => resultsOf(await client.renewBatch({ items })), clock, batching);
  return {
    complete: (item: CompleteItem, stillWanted: () => boolean) => completes.add(item, stillWanted),
    nack: (item: NackItem, stillWanted: () => boolean) => nacks.add(item, stillWanted),
    renew: (item: RenewItem, _options: CallOptions) => renewals.add(item),
  };
}

/** Errors after which a retried admit should keep its Idempotency-Key: the first try may have claimed. */
function mayHaveClaimed(error: unknown): boolean {
  if (!isApiError(error)) return true;
  return error.status === 0 || error.status >= 500 || error.code === 'IDEMPOTENCY_KEY_IN_FLIGHT';
}

// ---------------------------------------------------------------------------------------------

export function createWorker<I = unknown, O = unknown>(options: WorkerOptions<I, O>): Worker {
  const { client, mailboxId, scopeId, holder, leaseSeconds, handler } = options;
  if (!Number.isInteger(options.concurrency) || options.concurrency < 1) throw new RangeError(`concurrency must be a positive integer, got ${options.concurrency}`);
  const concurrency = options.concurrency;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? systemRandom;
  const waitMs = options.waitMs ?? defaultAdmitWaitMs;
  const admitBackoff = options.admitBackoff ?? defaultAdmitBackoff;
  const holderSession = randomUUID();
  const batching = options.batching === false ? null : { ...defaultBatching, ...options.batching };
  const steps = deliverySteps(client, clock, batching);
  const logger = options.logger ?? consoleLogger;
  /** Set when admit answered what no retry fixes: the stop it began rejects with it. */
  let fatal: WorkerStoppedError | null = null;

  const counters = { admitted: 0, completed: 0, failed: 0, leaseLost: 0, inFlight: 0 };
  const runs = new Set<Run<I>>();
  let started = false;
  let stopping: Promise<void> | null = null;
  /** Aborts the admit long poll and the backoff and slot waits of the admit loop. */
  const stopAdmitting = new AbortController();
  let admitLoopDone: Promise<void> = Promise.resolve();
  let slotFreed: (() => void) | null = null;
  let uninstallSignals: (() => void) | null = null;

  let resolveDone!: () => void;
  let rejectDone!: (error: Error) => void;
  const done = new Promise<void>((resolve, reject) => ((resolveDone = resolve), (rejectDone = reject)));

  function emit(event: WorkerEvent<I>): void {
    try {
      options.onEvent?.(event);
    } catch {
      // A listener's bug must not stop the loop that it observes.
    }
    try {
      logEvent(event);
    } catch {
      // Nor a logger's.
    }
  }

  /** The log line of an event a user needs to see; admissions, renewals and completions are not logged (onEvent has them). */
  function logEvent(event: WorkerEvent<I>): void {
    switch (event.type) {
      case 'failed':
        return logger.warn(
          { holder, taskId: event.taskId, messageId: event.messageId, retry: event.retry, ...(event.reason === 'drain' ? { reason: 'drain' } : failureFields(event.error)) },
          event.reason === 'drain' ? 'task handed back by the drain' : event.retry ? 'task failed; it will be retried' : 'task failed permanently',
        );
      case 'lease_lost':
        return logger.warn({ holder, taskId: event.taskId, messageId: event.messageId, cause: event.cause }, 'lease lost: the handler was aborted and its result will not be sent');
      case 'error':
        if (event.stage === 'admit' && fatal !== null) return logger.error({ holder, mailboxId, scopeId, ...failureFields(event.error) }, fatal.message);
        return logger.warn(
          { holder, ...(event.messageId === undefined ? {} : { messageId: event.messageId }), ...failureFields(event.error), ...(event.retryInMs === undefined ? {} : { retryInMs: Math.round(event.retryInMs) }) },
          event.stage === 'admit' ? 'admit failed; backing off' : `${event.stage} failed`,
        );
      case 'stopped':
        return logger.info({ holder, ...counters }, 'worker stopped');
      default:
        return;
    }
  }

  // --- the admit loop ------------------------------------------------------------------------

  let claimSeq = 0;
  /** One Idempotency-Key per intended claim: a retry after a lost reply gets the same delivery back. */
  const nextClaimKey = (): string => `${holderSession}:claim-${++claimSeq}`;

  function slotFree(): Promise<void> {
    if (counters.inFlight < concurrency || stopAdmitting.signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => (slotFreed = resolve));
  }

  function wakeAdmitLoop(): void {
    const wake = slotFreed;
    slotFreed = null;
    wake?.();
  }

  function admitBackoffMs(failures: number): number {
    const ceilingMs = Math.min(admitBackoff.maxMs, admitBackoff.baseMs * 2 ** Math.max(0, failures - 1));
    // Half fixed, half jitter: never hammers at once, and workers that failed together spread out.
    return Math.floor(ceilingMs / 2 + (random.next() * ceilingMs) / 2);
  }

  async function admitLoop(): Promise<void> {
    let failures = 0;
    let claimKey = nextClaimKey();
    while (!stopAdmitting.signal.aborted) {
      await slotFree();
      if (stopAdmitting.signal.aborted) break;
      const sentAtMs = clock.now();
      let admitted: Admitted[];
      try {
        admitted = await admitFree({ signal: stopAdmitting.signal, idempotencyKey: claimKey });
      } catch (error) {
        if (stopAdmitting.signal.aborted) break;
        const hint = isApiError(error) ? fatalAdmitStatuses.get(error.status) : undefined;
        if (hint !== undefined && isApiError(error)) {
          fatal = new WorkerStoppedError(error.code, error.status, hint, error);
          emit({ type: 'error', stage: 'admit', error });
          // The rejection is the caller's through `done` and stop(); this call's copy is not.
          stop().catch(() => {});
          break;
        }
        failures += 1;
        if (!mayHaveClaimed(error)) claimKey = nextClaimKey();
        const retryInMs = admitBackoffMs(failures);
        emit({ type: 'error', stage: 'admit', error, retryInMs });
        await sleepQuietly(clock, retryInMs, stopAdmitting.signal);
        continue;
      }
      failures = 0;
      if (admitted.length === 0) {
        await sleepQuietly(clock, emptyAdmitPauseMs - (clock.now() - sentAtMs), stopAdmitting.signal);
        continue;
      }
      claimKey = nextClaimKey();
      const receivedAtMs = clock.now();
      for (const delivery of admitted) accept(delivery, receivedAtMs);
    }
  }

  /** One admit for as many deliveries as there are free slots (one with batching off). */
  async function admitFree(callOptions: CallOptions): Promise<Admitted[]> {
    const body = { scopeId, mailboxId, holder, holderSession, leaseSeconds, waitMs };
    if (batching === null) {
      const one = await client.admit(body, callOptions);
      return one === null ? [] : [one];
    }
    const maxTasks = Math.max(1, Math.min(concurrency - counters.inFlight, batching.maxItems));
    return client.admitBatch({ ...body, maxTasks }, callOptions);
  }

  // --- one delivery --------------------------------------------------------------------------

  function accept(admitted: Admitted, receivedAtMs: number): void {
    const delivery = toWorkerDelivery<I>(admitted);
    let markSettled!: () => void;
    const settled = new Promise<void>((resolve) => (markSettled = resolve));
    const deadlineMs = leaseDeadlineMs(admitted.leaseExpiresAt, receivedAtMs, leaseSeconds);
    const run: Run<I> = {
      delivery,
      token: admitted.token,
      state: 'running',
      deadlineMs,
      renewAtMs: renewAtMs(receivedAtMs, deadlineMs),
      leaseEnd: new AbortController(),
      handlerAbort: new AbortController(),
      settled,
      markSettled,
    };
    runs.add(run);
    void settled.then(() => runs.delete(run));
    counters.admitted += 1;
    emit({ type: 'admitted', delivery });

    if (stopAdmitting.signal.aborted) {
      // The admit answered after stop() began: hand the delivery straight back.
      void abandon(run);
      return;
    }
    counters.inFlight += 1;
    void keepRenewing(run);
    void watchExpiry(run);
    void runHandler(run);
  }

  async function runHandler(run: Run<I>): Promise<void> {
    let outcome: { ok: true; value: unknown } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, value: await handler({ delivery: run.delivery, signal: run.handlerAbort.signal }) };
    } catch (error) {
      outcome = { ok: false, error };
    }
    counters.inFlight -= 1;
    wakeAdmitLoop();
    if (run.state !== 'running') return; // lost or abandoned: its token is not ours to use any more
    run.state = 'finishing';
    run.leaseEnd.abort();
    if (outcome.ok) await complete(run, outcome.value);
    else await nack(run, !isPermanent(outcome.error), 'handler', outcome.error);
    finishRun(run);
  }

  function finishRun(run: Run<I>): void {
    if (run.state === 'finishing' || run.state === 'abandoned') run.state = 'done';
    run.markSettled();
  }

  async function complete(run: Run<I>, value: unknown): Promise<void> {
    const { messageId, taskId } = run.delivery;
    const result = await steps.complete(value === undefined ? { messageId, token: run.token } : { messageId, token: run.token, result: { payload: value } }, leaseLive(run));
    if (result === withdrawn) return recordLeaseLost(run, 'EXPIRED');
    if (result.ok) {
      counters.completed += 1;
      emit({ type: 'completed', messageId, taskId });
      return;
    }
    if (hasApiCode(result.error, 'LEASE_LOST')) return recordLeaseLost(run, 'LEASE_LOST');
    // The lease will run out and the delivery come back; nothing safer can be done from here.
    emit({ type: 'error', stage: 'complete', error: result.error, messageId });
  }

  async function nack(run: Run<I>, retry: boolean, reason: 'handler' | 'drain', cause?: unknown): Promise<void> {
    const { messageId, taskId } = run.delivery;
    const result = await steps.nack({ messageId, token: run.token, retry }, leaseLive(run));
    if (result === withdrawn) return recordLeaseLost(run, 'EXPIRED');
    if (result.ok) {
      counters.failed += 1;
      emit({ type: 'failed', messageId, taskId, retry, reason, ...(cause === undefined ? {} : { error: cause }) });
      return;
    }
    if (hasApiCode(result.error, 'LEASE_LOST')) return recordLeaseLost(run, 'LEASE_LOST');
    emit({ type: 'error', stage: 'nack', error: result.error, messageId });
  }

  // --- the lease -----------------------------------------------------------------------------

  /**
   * Whether the run's token may still be used: its local deadline has not passed. Asked when a
   * complete or nack leaves (a flusher forms its request later than the handler returned), so a
   * finish that waited past the lease is withdrawn and reported lost, never sent.
   */
  const leaseLive = (run: Run<I>) => (): boolean => clock.now() < run.deadlineMs;

  async function keepRenewing(run: Run<I>): Promise<void> {
    while (run.state === 'running') {
      await sleepQuietly(clock, run.renewAtMs - clock.now(), run.leaseEnd.signal);
      if (run.state !== 'running') return;
      await renewOnce(run);
    }
  }

  async function renewOnce(run: Run<I>): Promise<void> {
    const { messageId, taskId } = run.delivery;
    const result = await steps.renew({ messageId, token: run.token, leaseSeconds }, { signal: run.leaseEnd.signal });
    if (run.state !== 'running') return;
    if (result.ok) {
      const receivedAtMs = clock.now();
      run.deadlineMs = leaseDeadlineMs(result.value.leaseExpiresAt, receivedAtMs, leaseSeconds);
      run.renewAtMs = renewAtMs(receivedAtMs, run.deadlineMs);
      emit({ type: 'renewed', messageId, taskId, leaseExpiresAt: result.value.leaseExpiresAt });
      return;
    }
    if (hasApiCode(result.error, 'LEASE_LOST')) return loseLease(run, 'LEASE_LOST');
    // Try again well before the deadline; watchExpiry gives up for us when it passes.
    const retryInMs = Math.max(minRenewRetryMs, (run.deadlineMs - clock.now()) / 3);
    run.renewAtMs = clock.now() + retryInMs;
    emit({ type: 'error', stage: 'renew', error: result.error, messageId, retryInMs });
  }

  /** Sleeps to the local deadline; a renew that succeeded meanwhile has moved it, so look again. */
  async function watchExpiry(run: Run<I>): Promise<void> {
    while (run.state === 'running') {
      const leftMs = run.deadlineMs - clock.now();
      if (leftMs <= 0) return loseLease(run, 'EXPIRED');
      await sleepQuietly(clock, leftMs, run.leaseEnd.signal);
    }
  }

  function loseLease(run: Run<I>, cause: 'LEASE_LOST' | 'EXPIRED'): void {
    if (run.state !== 'running') return;
    run.state = 'lost';
    run.leaseEnd.abort();
    run.handlerAbort.abort(new DeliveryAbortedError(run.delivery.messageId, 'lease_lost'));
    recordLeaseLost(run, cause);
  }

  function recordLeaseLost(run: Run<I>, cause: 'LEASE_LOST' | 'EXPIRED'): void {
    run.state = 'lost';
    counters.leaseLost += 1;
    emit({ type: 'lease_lost', messageId: run.delivery.messageId, taskId: run.delivery.taskId, cause });
    run.markSettled();
  }

  // --- stopping ------------------------------------------------------------------------------

  /** A drain takes the delivery back: abort the handler and nack with retry so another worker gets it at once. */
  async function abandon(run: Run<I>): Promise<void> {
    if (run.state !== 'running') return;
    run.state = 'abandoned';
    run.leaseEnd.abort();
    run.handlerAbort.abort(new DeliveryAbortedError(run.delivery.messageId, 'drain'));
    await nack(run, true, 'drain');
    finishRun(run);
  }

  async function drain(deadlineMs: number): Promise<void> {
    await admitLoopDone;
    const deadlineOver = new AbortController();
    const deadline = sleepQuietly(clock, deadlineMs, deadlineOver.signal);
    await Promise.race([Promise.all([...runs].map((run) => run.settled)), deadline]);
    deadlineOver.abort();
    await Promise.all([...runs].map(abandon));
    // Completes and nacks already on their way are waited for: they are bounded by the client's timeouts.
    await Promise.all([...runs].map((run) => run.settled));
  }

  function start(): void {
    if (started || stopping) return;
    started = true;
    logger.info({ holder, holderSession, mailboxId, scopeId, concurrency, leaseSeconds }, 'worker started');
    admitLoopDone = admitLoop();
    if (options.handleSignals) uninstallSignals = installSignalHandlers(options.handleSignals === true ? {} : options.handleSignals);
  }

  function stop(stopOptions: { deadlineMs?: number } = {}): Promise<void> {
    if (stopping) return stopping;
    stopAdmitting.abort();
    wakeAdmitLoop();
    const deadlineMs = stopOptions.deadlineMs ?? defaultDrainDeadlineMs;
    if (started) logger.info({ holder, inFlight: counters.inFlight, deadlineMs }, 'draining: admitting no more, in-flight handlers finish until the deadline');
    stopping = drain(deadlineMs).then(() => {
      uninstallSignals?.();
      emit({ type: 'stopped' });
      if (fatal === null) return resolveDone();
      rejectDone(fatal);
      throw fatal;
    });
    return stopping;
  }

  function installSignalHandlers(hookOptions: { deadlineMs?: number; signals?: NodeJS.Signals[] } = {}): () => void {
    const signals = hookOptions.signals ?? ['SIGTERM', 'SIGINT'];
    const onSignal = (): void => void stop({ deadlineMs: hookOptions.deadlineMs ?? defaultDrainDeadlineMs });
    for (const signal of signals) process.on(signal, onSignal);
    return () => {
      for (const signal of signals) process.off(signal, onSignal);
    };
  }

  return {
    holderSession,
    start,
    stop,
    get stats(): WorkerStats {
      return { ...counters };
    },
    done,
    installSignalHandlers,
  };
}
