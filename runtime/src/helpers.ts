import { createHash } from 'node:crypto';
import type { schemas } from '@baton/core';
import type { TaskSubmitBody, TaskView as TypedTaskView } from './api-types';
import type { ApiErrorShape, In, Out, WorkerApi } from './contract';
import { systemClock, type RuntimeClock } from './clock';

/**
 * Small compositions of WorkerApi calls that every worker ends up writing: spend a budget
 * reservation around a piece of work, wait for quota, meet at a barrier, submit a task and
 * wait for its outcome. Each is safe to retry as a whole when given the same keys.
 */

type Reservation = Out<typeof schemas.reservationView>;
type EntryReply = Out<typeof schemas.entryReply>;
type Waiter = Out<typeof schemas.waiterView>;
type Barrier = Out<typeof schemas.barrierView>;
type TaskView = Out<typeof schemas.taskView>;

/** The longest the server holds a long poll (barriers, waiters, admit): longer waits are cut to it. */
const serverLongPollCapMs = 30_000;

/** A wait that ran out of time before the thing waited for happened. */
export class WaitTimeoutError extends Error {
  override name = 'WaitTimeoutError';
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
  ) {
    super(`${what} did not happen within ${timeoutMs} ms`);
  }
}

/** A wait that can no longer succeed: the waiter expired or was cancelled, the barrier was cancelled. */
export class WaitEndedError extends Error {
  override name = 'WaitEndedError';
  constructor(
    readonly what: string,
    readonly state: string,
  ) {
    super(`${what} ended ${state}`);
  }
}

/**
 * An Idempotency-Key from an operation's parts: readable when short, else a SHA-256 (the header
 * takes at most 255 characters). The budget id is a part because keys are scoped to the space
 * and the same workKey may be used on two budgets.
 */
function idempotencyKeyOf(...parts: string[]): string {
  const key = parts.join(':');
  return key.length <= 255 ? key : `sha256:${createHash('sha256').update(key).digest('hex')}`;
}

// ---------------------------------------------------------------------------------------------
// Budgets

export interface ReservationRequest {
  scopeId: string;
  holder: string;
  amountMinor: string;
  /** The stable key of this operation: the same on every retry of it, different for any other. */
  workKey: string;
  settleBy?: string;
}

/** Returns what the work spent in minor units, or nothing to settle the whole reservation. */
export type ReservedWork = (reservation: Reservation) => Promise<string | bigint | void | undefined>;

export interface ReservationOutcome {
  /** The reservation after the last settle or void. */
  reservation: Reservation;
  spentMinor: string;
  settled: EntryReply | null;
  voided: EntryReply | null;
}

/** The settle and void workKeys are derived, so a retry of the whole operation replays them instead of spending twice. */
export function reservationWorkKeys(workKey: string): { settle: string; void: string } {
  if (workKey.length > 500) throw new RangeError('workKey must be at most 500 characters (":settle" and ":void" are appended)');
  return { settle: `${workKey}:settle`, void: `${workKey}:void` };
}

function spentMinorOf(spent: string | bigint | void | undefined, reservation: Reservation): string {
  if (spent === undefined) return reservation.amountMinor;
  const text = typeof spent === 'bigint' ? spent.toString() : spent;
  if (!/^\d{1,18}$/.test(text)) throw new RangeError(`work must return minor units as digits, got ${text}`);
  return BigInt(text).toString();
}

/**
 * Reserve, run the work, settle what it spent (the full amount when it says nothing) and void
 * the rest; void everything when the work throws, then rethrow. A settle the server refuses
 * (INSUFFICIENT_BUDGET for an overspend) is thrown without voiding: the money was spent, and
 * the reservation stays ACTIVE for the caller to settle.
 */
export async function withReservation(
  client: WorkerApi,
  budgetId: string,
  request: ReservationRequest,
  work: ReservedWork,
  options: { signal?: AbortSignal } = {},
): Promise<ReservationOutcome> {
  const keys = reservationWorkKeys(request.workKey);
  const { signal } = options;
  const reservation = await client.reserve(
    budgetId,
    { scopeId: request.scopeId, holder: request.holder, amountMinor: request.amountMinor, ...(request.settleBy ? { settleBy: request.settleBy } : {}) },
    { signal, idempotencyKey: idempotencyKeyOf('reserve', budgetId, request.workKey) },
  );

  let spent: string | bigint | void | undefined;
  try {
    spent = await work(reservation);
  } catch (error) {
    await voidQuietly(client, budgetId, reservation.id, keys.void);
    throw error;
  }

  const spentMinor = spentMinorOf(spent, reservation);
  const settled =
    spentMinor === '0'
      ? null
      : await client.settle(
          budgetId,
          { reservationId: reservation.id, amountMinor: spentMinor, workKey: keys.settle },
          // The same Idempotency-Key on every retry keeps a refusal the answer (docs/api.md, Budgets).
          { signal, idempotencyKey: idempotencyKeyOf('settle', budgetId, keys.settle) },
        );
  const afterSettle = settled?.reservation ?? reservation;
  const voided =
    afterSettle.state === 'ACTIVE' && afterSettle.remainingMinor !== '0'
      ? await client.voidReservation(budgetId, { reservationId: reservation.id, workKey: keys.void }, { signal, idempotencyKey: idempotencyKeyOf('void', budgetId, keys.void) })
      : null;
  return { reservation: voided?.reservation ?? afterSettle, spentMinor, settled, voided };
}

/** On the failure path the work's error is what matters; a void that fails leaves the reservation to settleBy. */
async function voidQuietly(client: WorkerApi, budgetId: string, reservationId: string, workKey: string): Promise<void> {
  try {
    await client.voidReservation(budgetId, { reservationId, workKey }, { idempotencyKey: idempotencyKeyOf('void', budgetId, workKey) });
  } catch {
    // Swallowed on purpose: see above.
  }
}

// ---------------------------------------------------------------------------------------------
// Allowances

export interface QuotaRequest {
  scopeId: string;
  units: number;
  holder: string;
  /** How long the waiter may stay in line (5 to 3600, server default 300). */
  ttlSeconds?: number;
}

/**
 * Join the allowance's FIFO line and wait for a grant. A GRANTED waiter's units are already
 * spent in the window: there is nothing to consume afterwards. Throws WaitEndedError when the
 * waiter expires or is cancelled. An abort leaves the waiter in line until its ttl runs out.
 */
export async function acquireQuota(
  client: WorkerApi,
  allowanceId: string,
  request: QuotaRequest,
  options: { pollWaitMs?: number; signal?: AbortSignal; idempotencyKey?: string } = {},
): Promise<Waiter> {
  const { signal } = options;
  const pollWaitMs = Math.min(options.pollWaitMs ?? serverLongPollCapMs, serverLongPollCapMs);
  const body: In<typeof schemas.waitBody> = { scopeId: request.scopeId, units: request.units, holder: request.holder };
  if (request.ttlSeconds !== undefined) body.ttlSeconds = request.ttlSeconds;
  let waiter = await client.wait(allowanceId, body, { signal, ...(options.idempotencyKey ? { idempotencyKey: options.idempotencyKey } : {}) });
  while (waiter.state === 'WAITING') {
    signal?.throwIfAborted();
    waiter = await client.getWaiter(waiter.id, pollWaitMs, { signal });
  }
  if (waiter.state !== 'GRANTED') throw new WaitEndedError(`allowance waiter ${waiter.id}`, waiter.state);
  return waiter;
}

// ---------------------------------------------------------------------------------------------
// Barriers

/**
 * Arrive (idempotent per arrivalKey within the epoch) and long-poll until the barrier releases.
 * Returns the barrier as seen released, or in a later epoch when the one arrived in already
 * ended and the barrier was reused. Throws WaitEndedError when the epoch is cancelled and
 * WaitTimeoutError after timeoutMs.
 */
export async function arriveAndWait(
  client: WorkerApi,
  barrierId: string,
  arrivalKey: string,
  options: { timeoutMs: number; clock?: RuntimeClock; signal?: AbortSignal },
): Promise<Barrier> {
  const clock = options.clock ?? systemClock;
  const { signal, timeoutMs } = options;
  const deadlineMs = clock.now() + timeoutMs;
  const arrival = await client.arrive(barrierId, { arrivalKey }, { signal });
  let barrier: Barrier = arrival;
  for (;;) {
    if (barrier.state === 'RELEASED' || barrier.epoch > arrival.epoch) return barrier;
    if (barrier.state === 'CANCELLED') throw new WaitEndedError(`barrier ${barrierId} epoch ${barrier.epoch}`, 'CANCELLED');
    const leftMs = deadlineMs - clock.now();
    if (leftMs <= 0) throw new WaitTimeoutError(`release of barrier ${barrierId}`, timeoutMs);
    signal?.throwIfAborted();
    barrier = await client.getBarrier(barrierId, Math.min(leftMs, serverLongPollCapMs), { signal });
  }
}

// ---------------------------------------------------------------------------------------------
// Tasks

export const terminalTaskStates: ReadonlySet<TaskView['state']> = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED', 'EXPIRED']);

/** A task of submitMany: its reply (created or joined), or the error its submit answered. */
export type SubmitResult = { ok: true; created: boolean; reply: Out<typeof schemas.taskSubmitReply> } | { ok: false; error: ApiErrorShape };

/**
 * Submits any number of tasks in batches of up to `batchSize` (POST /tasks/submit-batch, 100 at
 * most), one batch after another, and answers one result per task in order. Each task is
 * create-or-join by its taskKey, so running the same call again (after a crash, say) joins what
 * it already created. One task refused (TASK_KEY_CONFLICT, ...) fails only itself; a batch that
 * fails whole (after the client's retries) throws, and the batches before it stand.
 *
 * A task refused with BACKLOG_FULL (its mailbox or space holds as many live messages as it may)
 * is submitted again once workers have made room: after 250 ms, doubling to 2 s, for at most
 * `roomWaitMs` (default 60 s; 0: never), and only then answered as refused. Submitting again is
 * safe: the refused task was not stored, and its taskKey joins it if a retry raced. Why: a
 * producer submitting more than a mailbox's backlogLimit (1,000 by default) beside running
 * workers otherwise saw part of its batch refused for a backlog that drains in seconds.
 */
export async function submitMany<I = unknown>(
  client: WorkerApi,
  tasks: readonly TaskSubmitBody<NoInfer<I>>[],
  options: { batchSize?: number; roomWaitMs?: number; clock?: RuntimeClock; signal?: AbortSignal } = {},
): Promise<SubmitResult[]> {
  const batchSize = options.batchSize ?? maxBatchItems;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > maxBatchItems) throw new RangeError(`batchSize must be 1 to ${maxBatchItems}, got ${batchSize}`);
  const clock = options.clock ?? systemClock;
  const untilMs = clock.now() + (options.roomWaitMs ?? 60_000);
  const results: SubmitResult[] = new Array<SubmitResult>(tasks.length);
  let pending = tasks.map((_, i) => i);
  for (let pauseMs = 250; ; pauseMs = Math.min(2 * pauseMs, 2_000)) {
    await submitInBatches(client, tasks, pending, batchSize, results, options.signal);
    pending = pending.filter((i) => !results[i]!.ok && (results[i] as { error: ApiErrorShape }).error.code === 'BACKLOG_FULL');
    if (pending.length === 0 || clock.now() + pauseMs > untilMs) return results;
    await clock.sleep(pauseMs, options.signal);
  }
}

/** One pass of submitMany over the tasks at `indexes`, writing each one's result in place. */
async function submitInBatches(
  client: WorkerApi,
  tasks: readonly TaskSubmitBody<unknown>[],
  indexes: readonly number[],
  batchSize: number,
  results: SubmitResult[],
  signal: AbortSignal | undefined,
): Promise<void> {
  for (let start = 0; start < indexes.length; start += batchSize) {
    const chunk = indexes.slice(start, start + batchSize);
    const replies = await client.submitBatch({ tasks: chunk.map((i) => tasks[i]!) }, signal ? { signal } : {});
    for (const [k, reply] of replies.entries()) {
      results[chunk[k]!] =
        reply.status === 200 || reply.status === 201
          ? { ok: true, created: reply.status === 201, reply: reply.body as Out<typeof schemas.taskSubmitReply> }
          : { ok: false, error: { ...(reply.body as { error: Omit<ApiErrorShape, 'status'> }).error, status: reply.status } };
    }
  }
}

/** docs/design/0015-batches.md: a batch holds 1 to 100 items. */
const maxBatchItems = 100;

/**
 * Submit (create-or-join by taskKey, so a retry with the same body joins the same task) and
 * wait on the server until the task is final: each GET /tasks/{id}?waitMs= is held until the
 * task ends (woken by the commit that ends it) or 30 s pass, so a waiting caller costs one
 * request per 30 s, not one per poll. Returns the task view: `outcome` on SUCCEEDED,
 * `failureReason` otherwise. Throws WaitTimeoutError after timeoutMs; the task runs on. `I` and
 * `O` are the caller's word for the task's input and outcome (what its worker completes it with).
 *
 * A reply that comes back unfinished before its wait ran out (the server drains, or an older
 * server that does not hold) is followed by a pause of `pollMs` (default 500) before asking again,
 * so such a server is not asked in a tight loop.
 */
export async function submitAndAwait<I = unknown, O = unknown>(
  client: WorkerApi,
  body: TaskSubmitBody<I>,
  options: { timeoutMs?: number; pollMs?: number; clock?: RuntimeClock; signal?: AbortSignal } = {},
): Promise<TypedTaskView<I, O>> {
  const clock = options.clock ?? systemClock;
  const { signal } = options;
  const timeoutMs = options.timeoutMs ?? 300_000;
  const pollMs = options.pollMs ?? 500;
  const deadlineMs = clock.now() + timeoutMs;
  const submitted = await client.submitTask(body, { signal });
  for (;;) {
    const waitMs = Math.max(0, Math.min(deadlineMs - clock.now(), serverLongPollCapMs));
    const askedAtMs = clock.now();
    const task = await client.getTask(submitted.taskId, { signal, waitMs });
    if (terminalTaskStates.has(task.state)) return task as TypedTaskView<I, O>;
    const leftMs = deadlineMs - clock.now();
    if (leftMs <= 0) throw new WaitTimeoutError(`task ${submitted.taskId} reaching a terminal state`, timeoutMs);
    const heldMs = clock.now() - askedAtMs;
    if (heldMs < waitMs) await clock.sleep(Math.min(pollMs, leftMs), signal);
  }
}
