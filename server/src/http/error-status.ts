import type { ErrorCode } from '@baton/core';

/**
 * docs/design/0004-error-codes.md as a table: each code's HTTP status, and whether an idempotent reply of it
 * is stored. Codes raised before an operation runs (authentication, permission, validation,
 * rate and plan limits, in-flight and reuse of a key) and 5xx are never stored (docs/design/0005-idempotency-keys.md).
 */
export const errorTable: Record<ErrorCode, { status: number; stored: boolean }> = {
  UNAUTHENTICATED: { status: 401, stored: false },
  FORBIDDEN: { status: 403, stored: false },
  ENTITLEMENT_EXCEEDED: { status: 403, stored: true },
  NOT_FOUND: { status: 404, stored: true },
  VALIDATION_FAILED: { status: 400, stored: false },
  IDEMPOTENCY_KEY_REQUIRED: { status: 400, stored: false },
  PAYLOAD_TOO_LARGE: { status: 413, stored: true },
  IDEMPOTENCY_KEY_REUSED: { status: 422, stored: false },
  CONFLICT: { status: 409, stored: true },
  INSUFFICIENT_BUDGET: { status: 409, stored: true },
  TASK_KEY_CONFLICT: { status: 409, stored: true },
  LEASE_LOST: { status: 409, stored: true },
  CLAIM_HELD: { status: 409, stored: true },
  IDEMPOTENCY_KEY_IN_FLIGHT: { status: 409, stored: false },
  QUOTA_EXHAUSTED: { status: 429, stored: true },
  RATE_LIMITED: { status: 429, stored: false },
  SERVICE_RATE_LIMITED: { status: 429, stored: false },
  CONCURRENCY_LIMITED: { status: 429, stored: false },
  OPERATIONS_EXHAUSTED: { status: 429, stored: false },
  BACKLOG_FULL: { status: 429, stored: true },
  PLAN_LIMIT_REACHED: { status: 429, stored: false },
  UNAVAILABLE: { status: 503, stored: false },
  INTERNAL: { status: 500, stored: false },
};
