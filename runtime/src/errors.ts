import type { ErrorCode } from '@baton/core';
import type { ApiErrorShape } from './contract';
import type { TransportResponse } from './transport';
import { parseRetryAfterMs } from './retry';

/**
 * Codes the client makes itself. NETWORK: no reply arrived (connection failure or the attempt's
 * timeout), status 0. BAD_REPLY: a reply that is not what the API sends (not JSON, or an error
 * without the envelope, as a proxy in front of the server may answer); status is the reply's.
 * UNKNOWN_CODE: an error envelope whose code this version of the runtime does not know (a newer
 * server's); `serverCode` holds it.
 */
export type ClientErrorCode = 'NETWORK' | 'BAD_REPLY' | 'UNKNOWN_CODE';
/** Every code a BatonApiError can carry: the server's (docs/design/0004-error-codes.md) and the client's own. */
export type ApiErrorCode = ErrorCode | ClientErrorCode;

export interface BatonApiErrorInit extends ApiErrorShape {
  /** From `Retry-After` on a 429 or 503; null when absent or unreadable. */
  retryAfterMs?: number | null;
  cause?: unknown;
}

/** Every failed call rejects with this (except a caller's abort, which rejects with the signal's reason). */
export class BatonApiError extends Error implements ApiErrorShape {
  override readonly name = 'BatonApiError';
  /** A union: `switch (error.code)` is checked for exhaustiveness, and a misspelt code does not compile. */
  readonly code: ApiErrorCode;
  /** The code as the reply sent it: equal to `code`, except under UNKNOWN_CODE. */
  readonly serverCode: string;
  readonly status: number;
  readonly requestId: string | null;
  readonly details?: unknown;
  readonly retryAfterMs: number | null;

  constructor(init: BatonApiErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = isApiErrorCode(init.code) ? init.code : 'UNKNOWN_CODE';
    this.serverCode = init.code;
    this.status = init.status;
    this.requestId = init.requestId;
    if (init.details !== undefined) this.details = init.details;
    this.retryAfterMs = init.retryAfterMs ?? null;
  }
}

/**
 * Which server codes a retry can cure (docs/design/0004-error-codes.md, docs/design/0005-idempotency-keys.md). A retry carries the same
 * Idempotency-Key, so a code whose reply the server stores would only be replayed: retrying
 * CONFLICT, INSUFFICIENT_BUDGET, QUOTA_EXHAUSTED or BACKLOG_FULL gains nothing and the caller
 * must decide (wait in the allowance's line, back off the mailbox). Codes raised before the
 * operation ran are not stored, but a retry cures only the transient ones: the key's first
 * request still running (IN_FLIGHT), rate and concurrency limits (they send Retry-After), and
 * 5xx. A plan limit or the month's operations do not pass in a retry's time. A Record, so a new
 * code in core fails the typecheck here until someone decides.
 */
const retryableByCode: Record<ErrorCode, boolean> = {
  UNAUTHENTICATED: false,
  FORBIDDEN: false,
  ENTITLEMENT_EXCEEDED: false,
  NOT_FOUND: false,
  VALIDATION_FAILED: false,
  IDEMPOTENCY_KEY_REQUIRED: false,
  PAYLOAD_TOO_LARGE: false,
  IDEMPOTENCY_KEY_REUSED: false,
  CONFLICT: false,
  INSUFFICIENT_BUDGET: false,
  TASK_KEY_CONFLICT: false,
  LEASE_LOST: false,
  CLAIM_HELD: false,
  IDEMPOTENCY_KEY_IN_FLIGHT: true,
  QUOTA_EXHAUSTED: false,
  RATE_LIMITED: true,
  SERVICE_RATE_LIMITED: true,
  CONCURRENCY_LIMITED: true,
  OPERATIONS_EXHAUSTED: false,
  BACKLOG_FULL: false,
  PLAN_LIMIT_REACHED: false,
  // The store cannot be reached or the server is draining: Retry-After says when to try again.
  UNAVAILABLE: true,
  INTERNAL: true,
};

const isServerCode = (code: string): code is ErrorCode => Object.hasOwn(retryableByCode, code);
const clientCodes: Record<ClientErrorCode, true> = { NETWORK: true, BAD_REPLY: true, UNKNOWN_CODE: true };

/** Whether `code` is one this runtime knows, the server's or its own. */
export function isApiErrorCode(code: string): code is ApiErrorCode {
  return isServerCode(code) || Object.hasOwn(clientCodes, code);
}

/** True when the same call, repeated with the same Idempotency-Key, may succeed. */
export function isRetryable(error: unknown): boolean {
  if (!(error instanceof BatonApiError)) return false; // a bug or an abort: retrying repeats it
  if (error.code === 'NETWORK') return true;
  if (isServerCode(error.code)) return retryableByCode[error.code];
  // No envelope of ours (a proxy, a load balancer, a newer server's code): go by the status.
  return error.status === 408 || error.status === 429 || error.status >= 500;
}

/** No reply arrived: the request may or may not have been applied (retry with the same key to learn which). */
export function isTransportFailure(error: unknown): error is BatonApiError {
  return error instanceof BatonApiError && error.status === 0;
}

export function hasCode(error: unknown, code: ApiErrorCode): error is BatonApiError {
  return error instanceof BatonApiError && error.code === code;
}

export function networkError(cause: unknown): BatonApiError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new BatonApiError({ code: 'NETWORK', status: 0, message: `no reply: ${reason}`, requestId: null, details: { kind: 'network' }, cause });
}

export function timeoutError(timeoutMs: number): BatonApiError {
  return new BatonApiError({ code: 'NETWORK', status: 0, message: `no reply within ${timeoutMs} ms`, requestId: null, details: { kind: 'timeout', timeoutMs } });
}

interface Envelope {
  error: { code: string; message: string; requestId?: string; details?: unknown };
}

function envelopeOf(text: string): Envelope | null {
  try {
    const parsed: unknown = JSON.parse(text);
    const error = (parsed as { error?: unknown } | null)?.error as Record<string, unknown> | undefined;
    if (error && typeof error.code === 'string' && typeof error.message === 'string') return parsed as Envelope;
  } catch {
    // not JSON: handled as a reply without the envelope
  }
  return null;
}

/** The error a non-2xx reply stands for; `nowMs` reads a Retry-After given as an HTTP date. */
export function errorFromReply(response: TransportResponse, nowMs: number): BatonApiError {
  const headerRequestId = response.headers['x-request-id'] ?? null;
  const retryAfterMs = response.status === 429 || response.status === 503 ? parseRetryAfterMs(response.headers['retry-after'], nowMs) : null;
  const envelope = envelopeOf(response.body);
  if (envelope) {
    const { code, message, requestId, details } = envelope.error;
    return new BatonApiError({ code, status: response.status, message, requestId: requestId ?? headerRequestId, details, retryAfterMs });
  }
  const excerpt = response.body.length > 200 ? `${response.body.slice(0, 200)}...` : response.body;
  return new BatonApiError({
    code: 'BAD_REPLY',
    status: response.status,
    message: `HTTP ${response.status} without an error envelope${excerpt ? `: ${excerpt}` : ''}`,
    requestId: headerRequestId,
    retryAfterMs,
  });
}
