import { isReadyTopic, type OpContext, type ResourceKind } from '@baton/core';
import type { FastifyRequest } from 'fastify';
import type { AppDeps } from './deps';
import type { LeaseHold } from '../limits/lease-hold';
import { longPollOn, type Wake } from './long-poll';
import { attemptOperation, type KeyRule, type Outcome } from './operation';

/** One claim try: what it claimed (undefined: nothing), and what could change an empty try. */
export interface ClaimTry {
  claimed: unknown;
  wakeTopics: string[];
  retryAtMs?: number | null;
  /** An admit's: the kinds of resource found short when it admitted nothing (metrics count them). */
  blockedBy?: readonly ResourceKind[];
  /** An admit's: nothing admitted because the plan's agents at once left too few leases for a candidate (itself and its pool units). */
  leasesShort?: boolean;
}

/**
 * Runs a claim call's try with the leases it may hand out held for it (Limits.holdLeases: up to
 * `wanted` deliveries, CONCURRENCY_LIMITED when none is left), released once the try ended, by
 * when what it handed out is counted (operation.ts records it on commit).
 */
export async function holdingLeases<T>(deps: AppDeps, request: FastifyRequest, wanted: number, work: (hold: LeaseHold) => Promise<T>): Promise<T> {
  const hold = deps.limits.holdLeases(request.principal!.org, wanted);
  try {
    return await work(hold);
  } finally {
    hold.release();
  }
}

/**
 * The long poll of a claim route (recv, admit and their batch twins): each try is an operation of
 * its own transaction, answering 200 with what it claimed or 204 (not stored under the
 * Idempotency-Key, docs/design/0005-idempotency-keys.md, so a retry with the key tries again), repeated until it claims or
 * `waitMs` ends. It parks on `firstTopics` (the ready topics of the request's scope) before the
 * first try, then on what each empty try names: the gate scopes below it, the resources found short.
 * Each try claims at most the deliveries its lease hold allows of `wanted` (`hold.deliveries`), and
 * a try that admitted nothing for want of leases (a candidate's pool units are leases too)
 * answers CONCURRENCY_LIMITED.
 *
 * A client that left (its connection closed: an aborted fetch closes it) is claimed nothing more
 * for: its parked wait ends and no try is made for it, since a delivery claimed then would stay
 * leased to nobody until the lease ran out. A ready wake it may have taken is passed on.
 */
export function pollClaim(deps: AppDeps, request: FastifyRequest, keyRule: KeyRule, waitMs: number, firstTopics: string[], wanted: number, claim: (ctx: OpContext, hold: LeaseHold) => Promise<ClaimTry>): Promise<Outcome> {
  let wake: Wake = { topics: [], atMs: null };
  let blockedBy: readonly ResourceKind[] = [];
  let leasesShort = false;
  const attempt = async (): Promise<Outcome> => {
    blockedBy = [];
    leasesShort = false;
    const outcome = await holdingLeases(deps, request, wanted, (hold) =>
      attemptOperation(
        deps,
        request,
        keyRule,
        async (ctx) => {
          hold.restart();
          const tried = await claim(ctx, hold);
          wake = { topics: tried.wakeTopics, atMs: tried.retryAtMs ?? null };
          blockedBy = tried.blockedBy ?? [];
          leasesShort = tried.leasesShort ?? false;
          return tried.claimed === undefined ? { statusCode: 204, body: undefined } : { statusCode: 200, body: tried.claimed };
        },
        (result) => result.statusCode !== 204,
      ),
    );
    if (outcome.statusCode === 204 && leasesShort) throw deps.limits.concurrencyLimited(request.principal!.org);
    // Counted once the try has ended, from its last run (a transaction run again reports once).
    if (outcome.statusCode === 204 && blockedBy.length > 0) deps.telemetry.admissionBlocked(blockedBy);
    return outcome;
  };
  const left = new AbortController();
  const socket = request.raw.socket as { once?: unknown; off?: unknown } | null | undefined;
  const watched = typeof socket?.once === 'function' && typeof socket?.off === 'function' ? (request.raw.socket as NodeJS.EventEmitter) : null;
  const onClose = (): void => left.abort();
  watched?.once('close', onClose);
  const attemptUnlessLeft = (): Promise<Outcome> => (left.signal.aborted ? Promise.resolve({ statusCode: 204, body: undefined, replayed: false }) : attempt());
  return longPollOn(deps, waitMs, attemptUnlessLeft, (o) => o.statusCode !== 204, () => wake, firstTopics, { signal: left.signal }).finally(() => {
    watched?.off('close', onClose);
    // Whatever READY wake this poll took is not lost with it: a poll woken for nothing claims nothing and stops there.
    if (left.signal.aborted) for (const topic of new Set([...firstTopics, ...wake.topics])) if (isReadyTopic(topic)) deps.notifier.notify(topic, 1);
  });
}
