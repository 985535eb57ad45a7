import type { ApiErrorShape } from '../contract';

/**
 * The worker's errors: the ones a handler throws to say how it failed, the one its signal aborts
 * with, and the one a worker stops by itself with. API errors are recognised by shape, not by
 * class: the worker runs on any WorkerApi, not only the HTTP client.
 */

/** An error the API answered (or the client's NETWORK error), recognised by shape. */
export function isApiError(error: unknown): error is ApiErrorShape {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { code?: unknown; status?: unknown };
  return typeof e.code === 'string' && typeof e.status === 'number';
}

/** The server refused the delivery's token: the lease is someone else's now. */
export function isLeaseLost(error: unknown): boolean {
  return isApiError(error) && error.code === 'LEASE_LOST';
}

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
