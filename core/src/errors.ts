/**
 * Error codes of docs/design/0004-error-codes.md. Core raises BatonError with a code; the server maps the
 * code to its HTTP status (server/src/http/error-status.ts), so core knows nothing of HTTP.
 */
export const errorCodes = [
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'ENTITLEMENT_EXCEEDED',
  'NOT_FOUND',
  'VALIDATION_FAILED',
  'IDEMPOTENCY_KEY_REQUIRED',
  'PAYLOAD_TOO_LARGE',
  'IDEMPOTENCY_KEY_REUSED',
  'CONFLICT',
  'INSUFFICIENT_BUDGET',
  'TASK_KEY_CONFLICT',
  'LEASE_LOST',
  'CLAIM_HELD',
  'IDEMPOTENCY_KEY_IN_FLIGHT',
  'QUOTA_EXHAUSTED',
  'RATE_LIMITED',
  'SERVICE_RATE_LIMITED',
  'CONCURRENCY_LIMITED',
  'OPERATIONS_EXHAUSTED',
  'BACKLOG_FULL',
  'PLAN_LIMIT_REACHED',
  'UNAVAILABLE',
  'INTERNAL',
] as const;

export type ErrorCode = (typeof errorCodes)[number];

/** One problem of a VALIDATION_FAILED (and the few other refusals that name a field): where, and what. */
export interface ErrorDetail {
  path: string;
  message: string;
}

/** CLAIM_HELD's details (docs/design/0020-claims.md): who holds the key, and when its live lease runs out (ISO 8601). */
export interface ClaimHeldDetails {
  holder: string;
  leaseExpiresAt: string;
}

/** A list of `{path, message}` for VALIDATION_FAILED and the like; an object for CLAIM_HELD. */
export type ErrorDetails = ErrorDetail[] | ClaimHeldDetails;

export class BatonError extends Error {
  override name = 'BatonError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetails,
    /** For a 429 or 503: how long until the call can pass (docs/design/0016-limits-and-retry-after.md); the server sends it as Retry-After. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

export const notFound = (what: string): BatonError => new BatonError('NOT_FOUND', `${what} not found`);
export const conflict = (message: string): BatonError => new BatonError('CONFLICT', message);
export const forbidden = (message: string): BatonError => new BatonError('FORBIDDEN', message);
export const validationFailed = (path: string, message: string): BatonError =>
  new BatonError('VALIDATION_FAILED', `${path}: ${message}`, [{ path, message }]);
