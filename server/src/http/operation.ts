import { createHash } from 'node:crypto';
import { BatonError, canonicalJson, spaceLimits, together, type OpContext, type Tx } from '@baton/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errorBody, retryAfterSeconds, type ErrorBody } from './error-handler';
import { errorTable } from './error-status';
import type { AppDeps } from './deps';
import { recordCall } from './limit-hooks';

/** docs/design/0005-idempotency-keys.md: replies are replayable for 24 hours. */
export const replayWindowMs = 24 * 60 * 60 * 1000;

export interface OperationResult {
  statusCode: number;
  body: unknown;
}

export type Operation = (ctx: OpContext) => Promise<OperationResult>;

/**
 * Whether a call must carry an Idempotency-Key (docs/design/0005-idempotency-keys.md): every
 * create and every call whose repeat would do something twice must; renew, release, complete,
 * nack and the like may (their effect is the same repeated), and store their reply only when
 * they carry one.
 */
export type KeyRule = 'key-required' | 'key-optional';

export interface Outcome extends OperationResult {
  replayed: boolean;
  /** A 429's time to wait (BatonError.retryAfterMs), sent as Retry-After; a replay knows none. */
  retryAfterMs?: number;
}

/**
 * Runs one state-changing operation of a space in one transaction, with idempotency
 * (docs/design/0005-idempotency-keys.md). The operation's reply is stored in the same transaction as its effect; a
 * business error rolls the effect back and its reply is stored in a transaction of its own,
 * so the happy path pays nothing extra. Operations are metered here (limit-hooks.ts recordCall):
 * this is the one place that knows an operation really ran (not a replay).
 */
export async function runOperation(deps: AppDeps, request: FastifyRequest, reply: FastifyReply, keyRule: KeyRule, operation: Operation): Promise<FastifyReply> {
  return sendOutcome(reply, await attemptOperation(deps, request, keyRule, operation));
}

/**
 * runOperation without the reply: the outcome, for routes that try an operation more than once
 * (recv long-polls by repeating its claim). `keep` says whether a result is stored under the
 * Idempotency-Key; an empty recv or admit (204) is not (docs/design/0005-idempotency-keys.md), so a retry with the same
 * key tries again instead of replaying "nothing".
 */
export async function attemptOperation(
  deps: AppDeps,
  request: FastifyRequest,
  keyRule: KeyRule,
  operation: Operation,
  keep: (result: OperationResult) => boolean = () => true,
): Promise<Outcome> {
  const spaceId = request.principal!.space.id;
  const key = idempotencyKey(request, keyRule);
  const fingerprint = key === undefined ? '' : fingerprintOf(request);
  const nowMs = deps.clock.now();
  const limits = spaceLimits(request.principal!.space, request.principal!.org);
  const ctx = (tx: Tx): OpContext => ({ tx, spaceId, nowMs, random: deps.random, limits });

  let outcome: Outcome;
  try {
    outcome = await deps.store.transaction(async (tx) => {
      // The operation runs alongside the claim of its key, not after it, so the operation's first
      // reads travel in the claim's round trip (PostgreSQL pipelining; issue 12). That is safe
      // because nothing of the transaction commits unless the claim found the key free: on a
      // replay, or a key in flight, the whole transaction, the operation's writes with it, is
      // rolled back. Both always settle before the transaction ends.
      const [claim, run] = await Promise.allSettled([key === undefined ? undefined : claimKey(tx, spaceId, key, fingerprint, nowMs), operation(ctx(tx))]);
      if (claim.status === 'rejected') throw claim.reason;
      if (claim.value) throw new Replay(claim.value);
      if (run.status === 'rejected') throw run.reason;
      const result = run.value;
      if (key !== undefined && keep(result)) await tx.idempotency.put({ spaceId, key, fingerprint, statusCode: result.statusCode, body: result.body, createdAt: nowMs });
      return { ...result, replayed: false };
    });
    // Counted once committed, and only here: replays and failures are not operations (docs/api.md "Limits").
    recordCall(deps, request, outcome);
  } catch (error) {
    if (error instanceof Replay) return error.outcome;
    if (!(error instanceof BatonError) || !errorTable[error.code].stored || key === undefined) throw error;
    outcome = await storeErrorReply(deps, spaceId, key, fingerprint, nowMs, error, request.id);
  }
  return outcome;
}

/** Thrown out of a transaction whose key was already used: rolls back what the operation did alongside. */
class Replay extends Error {
  constructor(readonly outcome: Outcome) {
    super('idempotent replay');
  }
}

/**
 * Stores a business error's reply whole, requestId included: a replay answers the first reply
 * byte for byte (issue 16), and sendOutcome makes its X-Request-Id that same id (docs/design/0004-error-codes.md).
 */
async function storeErrorReply(deps: AppDeps, spaceId: string, key: string, fingerprint: string, nowMs: number, error: BatonError, requestId: string): Promise<Outcome> {
  const statusCode = errorTable[error.code].status;
  const body = errorBody(error, requestId);
  return deps.store.transaction(async (tx) => {
    const replay = await claimKey(tx, spaceId, key, fingerprint, nowMs);
    if (replay) return replay;
    await tx.idempotency.put({ spaceId, key, fingerprint, statusCode, body, createdAt: nowMs });
    return { statusCode, body, replayed: false, retryAfterMs: error.retryAfterMs };
  });
}

/** Takes the key for this transaction; returns the stored reply when this is a replay. */
async function claimKey(tx: Tx, spaceId: string, key: string, fingerprint: string, nowMs: number): Promise<Outcome | undefined> {
  // Lock and read are two statements sent together: the read must take its snapshot after the
  // lock is granted, or it could miss the reply of a first request that just committed. Sent
  // together they still cost one round trip; the read is ignored when the lock is refused.
  const [locked, stored] = await together(tx.idempotency.tryLock(spaceId, key), tx.idempotency.get(spaceId, key));
  if (!locked) {
    throw new BatonError('IDEMPOTENCY_KEY_IN_FLIGHT', 'a request with this Idempotency-Key is still in flight; retry after it finishes');
  }
  if (!stored || stored.createdAt <= nowMs - replayWindowMs) return undefined;
  if (stored.fingerprint !== fingerprint) {
    throw new BatonError('IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key was used with another method, path or body');
  }
  return { statusCode: stored.statusCode, body: stored.body, replayed: true };
}

export function sendOutcome(reply: FastifyReply, outcome: Outcome): FastifyReply {
  if (outcome.replayed) reply.header('Idempotent-Replayed', 'true');
  if (outcome.statusCode === 429) reply.header('Retry-After', retryAfterSeconds(outcome.retryAfterMs));
  const body = outcome.body as Partial<ErrorBody>;
  if (!body?.error) return reply.code(outcome.statusCode).send(outcome.body);
  // A replayed error names the request that first got it, in the body and in X-Request-Id alike.
  // Records stored before requestIds were kept have none: they take the replaying request's.
  const requestId = body.error.requestId || reply.request.id;
  reply.header('X-Request-Id', requestId);
  return reply.code(outcome.statusCode).send({ error: { ...body.error, requestId } });
}

function idempotencyKey(request: FastifyRequest, keyRule: KeyRule): string | undefined {
  const header = request.headers['idempotency-key'];
  const key = Array.isArray(header) ? header[0] : header;
  if (key === undefined) {
    if (keyRule === 'key-required') throw new BatonError('IDEMPOTENCY_KEY_REQUIRED', 'this operation requires an Idempotency-Key header');
    return undefined;
  }
  if (key.length < 1 || key.length > 255) {
    throw new BatonError('VALIDATION_FAILED', 'Idempotency-Key must be 1 to 255 characters', [{ path: 'headers.idempotency-key', message: 'must be 1 to 255 characters' }]);
  }
  return key;
}

/** Method, path (without query) and canonical JSON body, hashed (docs/design/0005-idempotency-keys.md). */
function fingerprintOf(request: FastifyRequest): string {
  const path = request.url.split('?')[0];
  return createHash('sha256').update(`${request.method} ${path} ${canonicalJson(request.body ?? null)}`).digest('hex');
}
