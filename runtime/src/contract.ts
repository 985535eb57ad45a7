import type { ErrorCode, schemas } from '@baton/core';
import type { In, Out } from './schema-types';
import type { AdmittedDeliveryView, DeliveryView, MemberTaskBody, SubmitBatchBody, TaskSubmitBody, TaskView } from './api-types';

/**
 * The seam between the runtime's two halves: the typed client (client.ts, transport.ts,
 * retry.ts, errors.ts) and what is built on it (worker.ts, helpers.ts, groups.ts). Types only: the
 * runtime never imports server code, and imports core for its zod schemas' types alone.
 */

export type { In, Out };

export interface CallOptions {
  /** Aborts the call, including its retries and their backoff sleeps. */
  signal?: AbortSignal;
  /** Per attempt; the client's default otherwise. */
  timeoutMs?: number;
  /**
   * The Idempotency-Key of this logical operation. The client generates one per call when
   * absent and reuses it on every retry of that call.
   */
  idempotencyKey?: string;
}

/** GET /tasks/{id}'s options: with `waitMs`, a long poll until the task is in a final state (the server holds it at most 30,000 ms). */
export interface GetTaskOptions extends CallOptions {
  waitMs?: number;
}

/** A task delivery as admit answers it (null for 204: nothing admissible after the wait); `I` is the task's input. */
export type Admitted<I = unknown> = AdmittedDeliveryView<I>;

/**
 * The body of every error the server answers (docs/design/0004-error-codes.md), and of a batch item's refusal. The
 * batch seams below take any string as the code, so fakes and the simulator need not name one of
 * ErrorCode; the server only sends those.
 */
export interface ErrorEnvelope<Code extends string = ErrorCode> {
  error: { code: Code; message: string; requestId: string; details?: unknown };
}

/**
 * One item of a complete-, nack- or renew-batch reply (docs/design/0015-batches.md): the status and body its
 * single route would have answered; `body` is the single route's reply when `status` is 200, the
 * error envelope otherwise.
 */
export interface BatchItemReply<T> {
  /** The item's messageId; null only for an item that failed its schema (400) without a UUID there. */
  messageId: string | null;
  status: number;
  body: T | ErrorEnvelope<string>;
}

/** One item of a submit- or send-batch reply: 201 or 200 with the single route's reply, or the error envelope. */
export interface CreatedItemReply<T> {
  status: number;
  body: T | ErrorEnvelope<string>;
}

/**
 * The subset of the client that worker.ts and helpers.ts use. client.ts implements it (and more,
 * with type parameters for task inputs, outcomes and message payloads). The seams speak
 * `unknown` for those, so a fake or the simulator implements them without type parameters; the
 * helpers take the caller's types and narrow in one place each.
 */
export interface WorkerApi {
  admit(body: In<typeof schemas.admitBody>, options?: CallOptions): Promise<Admitted | null>;
  /** POST /tasks/admit-batch: up to maxTasks deliveries in FIFO order; [] for 204. */
  admitBatch(body: In<typeof schemas.admitBatchBody>, options?: CallOptions): Promise<Admitted[]>;
  completeBatch(body: In<typeof schemas.completeBatchBody>, options?: CallOptions): Promise<BatchItemReply<Out<typeof schemas.completeReply>>[]>;
  nackBatch(body: In<typeof schemas.nackBatchBody>, options?: CallOptions): Promise<BatchItemReply<Out<typeof schemas.nackReply>>[]>;
  renewBatch(body: In<typeof schemas.renewBatchBody>, options?: CallOptions): Promise<BatchItemReply<Out<typeof schemas.renewReply>>[]>;
  renew(messageId: string, body: In<typeof schemas.renewBody>, options?: CallOptions): Promise<Out<typeof schemas.renewReply>>;
  complete(messageId: string, body: In<typeof schemas.completeBody>, options?: CallOptions): Promise<Out<typeof schemas.completeReply>>;
  nack(messageId: string, body: In<typeof schemas.nackBody>, options?: CallOptions): Promise<Out<typeof schemas.nackReply>>;
  submitTask(body: TaskSubmitBody, options?: CallOptions): Promise<Out<typeof schemas.taskSubmitReply>>;
  /** POST /tasks/submit-batch: one reply per task, in order ({status, body}: 201 created, 200 joined, or the error). */
  submitBatch(body: SubmitBatchBody, options?: CallOptions): Promise<CreatedItemReply<Out<typeof schemas.taskSubmitReply>>[]>;
  /** GET /tasks/{id}?waitMs= (long poll until the task is SUCCEEDED, FAILED, CANCELLED or EXPIRED). */
  getTask(taskId: string, options?: GetTaskOptions): Promise<TaskView>;
  reserve(budgetId: string, body: In<typeof schemas.reserveBody>, options?: CallOptions): Promise<Out<typeof schemas.reservationView>>;
  settle(budgetId: string, body: In<typeof schemas.settleBody>, options?: CallOptions): Promise<Out<typeof schemas.entryReply>>;
  voidReservation(budgetId: string, body: In<typeof schemas.voidBody>, options?: CallOptions): Promise<Out<typeof schemas.entryReply>>;
  consume(allowanceId: string, body: In<typeof schemas.consumeBody>, options?: CallOptions): Promise<Out<typeof schemas.consumptionView>>;
  wait(allowanceId: string, body: In<typeof schemas.waitBody>, options?: CallOptions): Promise<Out<typeof schemas.waiterView>>;
  /** GET /allowance-waiters/{id}?waitMs= (long poll until it leaves WAITING). */
  getWaiter(waiterId: string, waitMs?: number, options?: CallOptions): Promise<Out<typeof schemas.waiterView>>;
  arrive(barrierId: string, body: In<typeof schemas.arriveBody>, options?: CallOptions): Promise<Out<typeof schemas.arriveReply>>;
  /** GET /barriers/{id}?waitMs= (long poll until released). */
  getBarrier(barrierId: string, waitMs?: number, options?: CallOptions): Promise<Out<typeof schemas.barrierView>>;
}

/** A task group as the server shows it: state, outcome and members with their verdicts. */
export type GroupView = Out<typeof schemas.groupView>;

/**
 * The subset of the client that groups.ts (runGroup) uses: the group routes it drives, the task
 * read that gives a member's outcome, and the task list that finds members by taskKey.
 */
export interface TaskGroupApi {
  createGroup(body: In<typeof schemas.groupCreateBody>, options?: CallOptions): Promise<Out<typeof schemas.groupCreatedReply>>;
  /** GET /task-groups/{id}?waitMs= (long poll until DECIDED). */
  getGroup(groupId: string, waitMs?: number, options?: CallOptions): Promise<GroupView>;
  createMemberTask(groupId: string, body: MemberTaskBody, options?: CallOptions): Promise<Out<typeof schemas.memberTaskReply>>;
  acceptMember(groupId: string, taskId: string, options?: CallOptions): Promise<Out<typeof schemas.verdictReply>>;
  rejectMember(groupId: string, taskId: string, options?: CallOptions): Promise<Out<typeof schemas.verdictReply>>;
  getTask(taskId: string, options?: CallOptions): Promise<TaskView>;
  listTasks(query?: { scopeId?: string; limit?: number; cursor?: string }, options?: CallOptions): Promise<Out<typeof schemas.taskPage>>;
}

/** The subset of the client that timers.ts (sleepUntil) uses besides arming: receive and complete one message. */
export interface TimerWaitApi {
  recv(mailboxId: string, body: In<typeof schemas.recvBody>, options?: CallOptions): Promise<DeliveryView | null>;
  complete(messageId: string, body: In<typeof schemas.completeBody>, options?: CallOptions): Promise<Out<typeof schemas.completeReply>>;
}

/** A claim as the server shows it (never with its token), and POST /claims's reply (with it). */
export type ClaimView = Out<typeof schemas.claimView>;
export type ClaimGrant = Out<typeof schemas.claimGrant>;

/** The subset of the client that claims.ts (withClaim) uses: acquire, renew and release. */
export interface ClaimApi {
  acquireClaim(body: In<typeof schemas.claimCreateBody>, options?: CallOptions): Promise<ClaimGrant>;
  renewClaim(claimId: string, body: In<typeof schemas.claimRenewBody>, options?: CallOptions): Promise<ClaimView>;
  releaseClaim(claimId: string, body: In<typeof schemas.claimReleaseBody>, options?: CallOptions): Promise<ClaimView>;
}

export type TimerView = Out<typeof schemas.timerView>;

/** The subset of the client that timers.ts uses. */
export interface TimerApi {
  armTimer(body: In<typeof schemas.timerArmBody>, options?: CallOptions): Promise<TimerView>;
}

export type RunView = Out<typeof schemas.runView>;

/** The subset of the client that runs.ts (withChildRun) uses. */
export interface RunApi {
  createRun(body: In<typeof schemas.runCreateBody>, options?: CallOptions): Promise<RunView>;
  completeRun(scopeId: string, options?: CallOptions): Promise<RunView>;
  cancelRun(scopeId: string, options?: CallOptions): Promise<RunView>;
}

/**
 * The error every failed call surfaces: the server's envelope (docs/design/0004-error-codes.md) or, for a
 * transport failure after the retries, code 'NETWORK' and status 0.
 */
export interface ApiErrorShape {
  code: string;
  status: number;
  message: string;
  requestId: string | null;
  details?: unknown;
}
