import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppDeps } from './deps';
import type { CallResult } from '../limits/limits';
import type { RateTicket } from '../limits/request-rate';
import { policyOf, type RoutePolicy } from '../limits/route-policy';

declare module 'fastify' {
  interface FastifyRequest {
    /** What the call took of the request rate, for its give-backs. */
    rateTicket?: RateTicket;
  }
}

/** Rule 4 gives back an empty claim only when it waited at least this long. */
const givenBackAfterWaitMs = 1_000;
/** A batch holds at most this many items (docs/design/0015-batches.md); a longer one fails validation after being counted as this many. */
const maxBatchItems = 100;

/**
 * Every /v1/spaces call passes the limits (server/src/limits/limits.ts) once its key is known and
 * its body parsed, before validation: a malformed call counts as a request too. The decision is
 * in memory; nothing here reaches the store.
 */
export function installLimits(v1: FastifyInstance, deps: AppDeps): void {
  v1.addHook('preValidation', async (request) => {
    const principal = request.principal;
    if (!principal) return; // unknown route: the not-found handler answers
    const policy = policyOf(request.method, request.routeOptions.url ?? '');
    request.rateTicket = deps.limits.admit(principal.org, principal.space, policy, unitsOf(request, policy), deps.clock.now());
  });
  v1.addHook('onResponse', async (request, reply) => {
    const ticket = request.rateTicket;
    if (!ticket || reply.statusCode !== 204) return;
    const policy = policyOf(request.method, request.routeOptions.url ?? '');
    const waitMs = (request.body as { waitMs?: unknown } | undefined)?.waitMs;
    if (policy.claims && typeof waitMs === 'number' && waitMs >= givenBackAfterWaitMs) deps.limits.finishEmptyWait(ticket);
  });
}

/** Counts what a call that ran did (operations, leases, tasks): called once per run that was not a replay. */
export function recordCall(deps: AppDeps, request: FastifyRequest, result: CallResult): void {
  const principal = request.principal;
  if (!principal) return;
  deps.limits.record(principal.org.id, policyOf(request.method, request.routeOptions.url ?? ''), result, request.rateTicket, deps.clock.now());
}

/** A batch counts as its items (docs/design/0015-batches.md); everything else as one request. */
function unitsOf(request: FastifyRequest, policy: RoutePolicy): number {
  if (policy.itemsField === undefined) return 1;
  const items = (request.body as Record<string, unknown> | undefined)?.[policy.itemsField];
  return Array.isArray(items) ? Math.min(Math.max(items.length, 1), maxBatchItems) : 1;
}
