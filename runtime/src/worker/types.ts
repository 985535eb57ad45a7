import type { TaskPayload } from '../api-types';
import type { RuntimeClock, RuntimeRandom } from '../clock';
import type { Admitted, WorkerApi } from '../contract';
import type { WorkerLogger } from '../logger';
import type { FlusherOptions } from './flusher';

/**
 * The worker's public shapes: what a handler sees, what the worker reports, what it is built
 * from and what it answers. worker.ts exports them; the parts under worker/ share them.
 */

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
   * is leased), and send completes, nacks and renewals through batch requests (worker/flusher.ts).
   * A handler's delivery counts as done only once the request carrying its complete answered.
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
