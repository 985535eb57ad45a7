import type { OpContext, ResourceKind } from '@baton/core';
import type { FastifyRequest } from 'fastify';
import type { AppDeps } from './deps';
import { longPollOn, type Wake } from './long-poll';
import { attemptOperation, type Outcome } from './operation';

/** One claim try: what it claimed (undefined: nothing), and what could change an empty try. */
export interface ClaimTry {
  claimed: unknown;
  wakeTopics: string[];
  retryAtMs?: number | null;
  /** An admit's: the kinds of resource found short when it admitted nothing (metrics count them). */
  blockedBy?: readonly ResourceKind[];
}

/**
 * The long poll of a claim route (recv, admit and their batch twins): each try is an operation of
 * its own transaction, answering 200 with what it claimed or 204 (not stored under the
 * Idempotency-Key, decisions §4, so a retry with the key tries again), repeated until it claims or
 * `waitMs` ends. It parks on `firstTopics` (the ready topics of the request's scope) before the
 * first try, then on what each empty try names: the gate scopes below it, the resources found short.
 */
export function pollClaim(deps: AppDeps, request: FastifyRequest, required: boolean, waitMs: number, firstTopics: string[], claim: (ctx: OpContext) => Promise<ClaimTry>): Promise<Outcome> {
  let wake: Wake = { topics: [], atMs: null };
  let blockedBy: readonly ResourceKind[] = [];
  const attempt = async (): Promise<Outcome> => {
    blockedBy = [];
    const outcome = await attemptOperation(
      deps,
      request,
      required,
      async (ctx) => {
        const tried = await claim(ctx);
        wake = { topics: tried.wakeTopics, atMs: tried.retryAtMs ?? null };
        blockedBy = tried.blockedBy ?? [];
        return tried.claimed === undefined ? { statusCode: 204, body: undefined } : { statusCode: 200, body: tried.claimed };
      },
      (result) => result.statusCode !== 204,
    );
    // Counted once the try has ended, from its last run (a transaction run again reports once).
    if (outcome.statusCode === 204 && blockedBy.length > 0) deps.telemetry.admissionBlocked(blockedBy);
    return outcome;
  };
  return longPollOn(deps, waitMs, attempt, (o) => o.statusCode !== 204, () => wake, firstTopics);
}
