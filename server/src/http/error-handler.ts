import { BatonError, StoreUnavailable, type ErrorCode, type ErrorDetails } from '@baton/core';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { drainBody } from './body-drain';
import { errorTable } from './error-status';
import { validationFailed } from './validation-error';

export interface ErrorBody {
  error: { code: ErrorCode; message: string; requestId: string; details?: ErrorDetails };
}

export function errorBody(error: BatonError, requestId: string): ErrorBody {
  const body: ErrorBody = { error: { code: error.code, message: error.message, requestId } };
  if (error.details) body.error.details = error.details;
  return body;
}

export function sendError(reply: FastifyReply, error: BatonError): FastifyReply {
  const status = errorTable[error.code].status;
  if (status === 429 || status === 503) reply.header('Retry-After', retryAfterSeconds(error.retryAfterMs));
  return reply.code(status).send(errorBody(error, reply.request.id));
}

/**
 * docs/design/0016-limits-and-retry-after.md: whole seconds, at least 1, rounded up so a client that waits them finds the
 * window or cooldown over. 1 when the refusal names no end (BACKLOG_FULL, UNAVAILABLE, and a
 * replayed 429, whose stored reply keeps no time).
 */
export function retryAfterSeconds(retryAfterMs: number | undefined): string {
  return String(Math.max(1, Math.ceil((retryAfterMs ?? 0) / 1000)));
}

/** docs/design/0004-error-codes.md: the write may or may not have committed, so the retry must carry the same key. */
const storeUnavailable = new BatonError(
  'UNAVAILABLE',
  'the store cannot be reached; retry after Retry-After seconds with the same Idempotency-Key (the write may or may not have committed)',
);

/** Every failure leaves as the envelope; a 5xx never carries a stack trace or SQL. */
export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler(async (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const known = toBatonError(error);
    if (known.code === 'INTERNAL') request.log.error({ err: error }, 'unexpected error');
    // docs/design/0024-oversized-bodies.md: the 413 goes out once the client has sent its body, so it can read it.
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') await drainBody(request.raw);
    return sendError(reply, known);
  });
  app.setNotFoundHandler((request, reply) => sendError(reply, new BatonError('NOT_FOUND', `no route ${request.method} ${request.url.split('?')[0]}`)));
}

/**
 * Fastify's router refuses some URLs before any route, hook or error handler runs: a path
 * parameter over maxParamLength (100 characters; no id is that long) and a segment that does not
 * percent-decode. By default it answers those with a body of its own, 414 or 400, and without
 * X-Request-Id; this answers them as every other bad path: 400 VALIDATION_FAILED in the envelope.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  reply.header('X-Request-Id', request.id);
  const problem = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'a path parameter is longer than 100 characters' : 'the path is not a valid URL (bad percent-encoding)';
  return sendError(reply, new BatonError('VALIDATION_FAILED', `params: ${problem}`, [{ path: 'params', message: problem }]));
}

function toBatonError(error: FastifyError): BatonError {
  if (error instanceof BatonError) return error;
  // Logged once per outage by store-outage.ts, not here per request.
  if (error instanceof StoreUnavailable) return storeUnavailable;
  if (hasZodFastifySchemaValidationErrors(error)) {
    const problems = error.validation.map((issue) => ({ path: issue.instancePath.split('/').filter(Boolean), message: issue.message ?? 'is invalid' }));
    return validationFailed(error.validationContext ?? 'body', problems);
  }
  switch (error.code) {
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new BatonError('VALIDATION_FAILED', `body: ${error.message}`, [{ path: 'body', message: error.message }]);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new BatonError('VALIDATION_FAILED', 'body: send JSON with Content-Type application/json', [{ path: 'body', message: 'Content-Type must be application/json' }]);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new BatonError('PAYLOAD_TOO_LARGE', 'request body is too large');
  }
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    // A client error Fastify raised that has no code of ours (e.g. a malformed header).
    return new BatonError('VALIDATION_FAILED', error.message);
  }
  return new BatonError('INTERNAL', 'internal error');
}
