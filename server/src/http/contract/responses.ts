import type { ErrorCode } from '@baton/core';
import { errorTable } from '../error-status';

/**
 * The error replies of the OpenAPI document, built in one place from docs/design/0004-error-codes.md (error-status.ts)
 * so every operation describes the same status the same way. Which statuses an operation gets is
 * decided by document.ts from the kind of route; what each one says is decided here.
 */

export type Json = Record<string, any>;

const errorRef = { $ref: '#/components/schemas/Error' };

/** Shared headers of the document's replies (components.headers). */
export const replyHeaders: Json = {
  'X-Request-Id': {
    description: 'The id of this request (yours when you sent a sane X-Request-Id, else a fresh one); equal to `error.requestId` on errors. Quote it when asking about a call.',
    schema: { type: 'string' },
  },
  'Retry-After': {
    description:
      'Whole seconds (at least 1) to wait before trying again: to the window or cooldown end for QUOTA_EXHAUSTED, the next minute for the rate limits, the next month for OPERATIONS_EXHAUSTED, else 1. Retry with the same Idempotency-Key.',
    schema: { type: 'integer', minimum: 1 },
    example: 3,
  },
  'Idempotent-Replayed': {
    description: '`true` when this reply is the stored reply of an earlier request with the same Idempotency-Key (docs/design/0005-idempotency-keys.md); absent otherwise.',
    schema: { type: 'string', enum: ['true'] },
  },
};

/** What each status means in Baton, whatever the operation; codes the operation adds are appended. */
const statusText: Record<number, string> = {
  400: 'The request is malformed: VALIDATION_FAILED when the path, query, headers or body fail their schema (`details` lists each problem with its path).',
  401: 'UNAUTHENTICATED: no bearer key, or the key is unknown or revoked.',
  403: 'FORBIDDEN: the key may not act in this space, or lacks the permission the operation needs.',
  404: 'NOT_FOUND: the space, or an id or name the call refers to, does not exist (or belongs to another organization).',
  409: 'CONFLICT: the current state does not allow the call (the message names it; e.g. its run has ended), or IDEMPOTENCY_KEY_IN_FLIGHT: a request with the same Idempotency-Key is still running; retry once it has finished.',
  413: 'PAYLOAD_TOO_LARGE: the body is over 1 MiB, or a payload, input or result is over the space\'s maxPayloadBytes.',
  422: 'IDEMPOTENCY_KEY_REUSED: this Idempotency-Key was already used in the space with another method, path or body.',
  429: 'A limit refused the call; wait Retry-After seconds, then retry with the same Idempotency-Key.',
  503: 'UNAVAILABLE: the store cannot be reached, or the server is draining. The write may or may not have committed: retry after Retry-After seconds with the same Idempotency-Key.',
};

/** Codes a status stands for on every operation that can answer it. */
const baseCodes: Record<number, ErrorCode[]> = {
  400: ['VALIDATION_FAILED'],
  401: ['UNAUTHENTICATED'],
  403: ['FORBIDDEN'],
  404: ['NOT_FOUND'],
  409: ['CONFLICT', 'IDEMPOTENCY_KEY_IN_FLIGHT'],
  413: ['PAYLOAD_TOO_LARGE'],
  422: ['IDEMPOTENCY_KEY_REUSED'],
  429: [],
  503: ['UNAVAILABLE'],
};

const requestId = '5f0c1d2e-8a4b-4c6d-9e7f-0a1b2c3d4e5f';

/** One example reply per code, as a person would meet it. */
const codeExamples: Partial<Record<ErrorCode, { summary: string; message: string; details?: unknown }>> = {
  VALIDATION_FAILED: {
    summary: 'A field fails its schema',
    message: 'body: scopeId must be a UUID; leaseSeconds must be at most 3600',
    details: [
      { path: 'body.scopeId', message: 'must be a UUID' },
      { path: 'body.leaseSeconds', message: 'must be at most 3600' },
    ],
  },
  IDEMPOTENCY_KEY_REQUIRED: { summary: 'The Idempotency-Key header is missing', message: 'this operation requires an Idempotency-Key header' },
  UNAUTHENTICATED: { summary: 'No key, or an unknown or revoked one', message: 'send Authorization: Bearer <API key>; the key given is missing, unknown or revoked' },
  FORBIDDEN: { summary: 'The key lacks the permission', message: 'credential lacks coordination_write' },
  ENTITLEMENT_EXCEEDED: { summary: 'Above the plan ceiling', message: 'requestsPerMinute 5000 is above the plan ceiling of 1200' },
  NOT_FOUND: { summary: 'Unknown id', message: 'mailbox 3b1f6c9e-2d4a-4f8b-8c7e-5a6d9e0f1b2c not found' },
  CONFLICT: { summary: 'The state does not allow the call', message: 'task is SUCCEEDED; only a nonterminal task can be cancelled' },
  INSUFFICIENT_BUDGET: { summary: 'Not enough left', message: 'reserve 2500 exceeds the available 1200' },
  TASK_KEY_CONFLICT: { summary: 'Same taskKey, another fingerprint', message: 'taskKey report-2026-11 exists with a different fingerprint' },
  LEASE_LOST: { summary: 'The token is not the live claim', message: 'the lease of this message was lost (expired or claimed again); stop working on it' },
  CLAIM_HELD: {
    summary: 'Another holder has the key',
    message: 'claimKey deploy-lock is held by worker-2',
    details: { holder: 'worker-2', leaseExpiresAt: '2026-11-27T17:05:30.000Z' },
  },
  IDEMPOTENCY_KEY_IN_FLIGHT: { summary: 'The same key is still running', message: 'a request with this Idempotency-Key is still in flight; retry after it finishes' },
  PAYLOAD_TOO_LARGE: { summary: 'Too large', message: 'payload is 80213 bytes; the space allows 65536' },
  IDEMPOTENCY_KEY_REUSED: { summary: 'Key used for another request', message: 'this Idempotency-Key was used with another method, path or body' },
  QUOTA_EXHAUSTED: { summary: 'The window is spent', message: 'allowance openai-tokens has 0 of 5 units left until 2026-11-27T18:00:00.000Z' },
  RATE_LIMITED: { summary: 'Over the space\'s request rate', message: 'the space is over its 600 requests per minute' },
  SERVICE_RATE_LIMITED: { summary: 'Over the plan\'s request rate', message: 'the organization is over its plan rate of 800 requests per minute' },
  CONCURRENCY_LIMITED: { summary: 'Too many live leases', message: 'the organization holds its plan\'s 10 concurrent leases' },
  OPERATIONS_EXHAUSTED: { summary: 'The month\'s operations are spent', message: 'the organization used its 100000 operations this month' },
  BACKLOG_FULL: { summary: 'The backlog is full', message: 'mailbox jobs holds its backlogLimit of 1000 messages' },
  PLAN_LIMIT_REACHED: { summary: 'At the plan\'s active tasks', message: 'the organization has its plan\'s 1000 active tasks' },
  UNAVAILABLE: { summary: 'Store out of reach, or draining', message: 'the store cannot be reached; retry after Retry-After seconds with the same Idempotency-Key (the write may or may not have committed)' },
};

/** The Error example of one code, as the server sends it. */
export function errorExample(code: ErrorCode): Json {
  const known = codeExamples[code] ?? { summary: code, message: code.toLowerCase().replaceAll('_', ' ') };
  return {
    summary: known.summary,
    value: { error: { code, message: known.message, requestId, ...(known.details === undefined ? {} : { details: known.details }) } },
  };
}

/**
 * The error reply of `status` for an operation that may raise `codes` (its own and the ones its
 * kind of route raises): the description names every code, and each code gets its example.
 */
export function errorReply(status: number, codes: readonly ErrorCode[], api: 'user' | 'operator' = 'user'): Json {
  // The operator API takes no Idempotency-Key; its 409 is only what the operation raises.
  const base = api === 'operator' && status === 409 ? [] : baseCodes[status]!;
  const all = [...new Set([...base, ...codes.filter((code) => errorTable[code].status === status)])];
  const text = api === 'operator' && status === 409 ? 'The current state does not allow the call (the message names it).' : statusText[status]!;
  const others = all.filter((code) => !text.includes(code));
  const description = others.length === 0 ? text : `${text} ${base.length === 0 ? 'Codes' : 'On this operation also'}: ${others.join(', ')}.`;
  const headers: Json = { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } };
  if (status === 429 || status === 503) headers['Retry-After'] = { $ref: '#/components/headers/Retry-After' };
  return {
    description,
    headers,
    content: { 'application/json': { schema: errorRef, examples: Object.fromEntries(all.map((code) => [code, errorExample(code)])) } },
  };
}

/** The statuses an error reply can have, in the document's order. */
export const errorStatuses = Object.keys(statusText).map(Number);
