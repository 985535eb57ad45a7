import { assert } from '../assert';
import type { OpContext } from '../context';
import { BatonError, notFound } from '../errors';
import { eventTypes, type NewEvent } from '../events/model';
import { leaseUntil } from '../messages/rules';
import { decodePositionCursor, encodePositionCursor } from '../paging';
import type { ClaimCreateBody, ClaimGrant, ClaimReleaseBody, ClaimRenewBody, ClaimView } from '../schemas/claims';
import type { Page } from '../store/page';
import { together } from '../store/together';
import type { Tx } from '../store/store';
import { isoFromMs } from '../time';
import type { Claim, ClaimState } from './model';
import { advanceFencing, claimTokenFor, decideAcquire, expiredClaim, hashClaimSecret, holdsClaim, newClaim, releasedClaim, renewedClaim } from './rules';
import { claimGrantView, claimView } from './views';
import { governingRun, refuseIfEnded } from '../runs/guard';

/**
 * Claims (docs/design/0020-claims.md): a lock with fencing. Lock order (docs/lock-order.md): the claim key's
 * row, then a claim row. An acquire takes both; renew, release and the expiry sweep take only
 * the claim row. Every change appends its event (aggregate `claim`) in the same transaction.
 */

/**
 * Claims `body.claimKey`: a new claim (created) with the key's next fencing token, or, when the
 * same holder and session hold the key live, that claim again with its token (not created,
 * nothing changes). A live claim of anyone else is CLAIM_HELD.
 *
 * The race: the key row is locked first (upserted: INSERT ... ON CONFLICT DO UPDATE, which
 * waits for a concurrent acquire of the key to end), and only then is the key's HELD claim read,
 * locked, in a statement of its own. Under READ COMMITTED a statement's snapshot is taken when
 * it starts, so that read sees whatever the acquire before it committed; a read in the same
 * statement as the upsert would not. Sent together, the two still cost one round trip.
 */
export async function acquire(ctx: OpContext, body: ClaimCreateBody): Promise<{ created: boolean; grant: ClaimGrant }> {
  // The scope's run first, locked against its end (docs/lock-order.md): an ended run refuses
  // every acquire under it, a repeat by the holder too (docs/design/0020-claims.md).
  const [run, key, held] = await together(
    governingRun(ctx, body.scopeId),
    ctx.tx.claims.lockKey(ctx.spaceId, body.claimKey, ctx.nowMs),
    ctx.tx.claims.getHeld(ctx.spaceId, body.claimKey, { forUpdate: true }),
  );
  refuseIfEnded(run, body.scopeId);
  const decision = decideAcquire(held, body.holder, hashClaimSecret(body.holderSession), ctx.nowMs);
  if (decision.kind === 'same') {
    const token = claimTokenFor(ctx.spaceId, decision.claim.id, decision.claim.tokenNonce, body.holderSession);
    assert(hashClaimSecret(token) === decision.claim.tokenHash, `claim ${decision.claim.id}: its token does not derive from its session`);
    return { created: false, grant: claimGrantView(decision.claim, token, body.holderSession) };
  }

  const id = ctx.random.uuid();
  const events: NewEvent[] = [];
  if (decision.expired) {
    // Ended here, not by the sweep: it is no longer HELD once this commits, so the sweep never
    // sees it, and claim.expired is emitted exactly once, whichever of the two ends it.
    const ended = expiredClaim(decision.expired, ctx.nowMs);
    await ctx.tx.claims.update(ended);
    events.push(expiredEvent(ended, id));
  }
  const advanced = advanceFencing(key, ctx.nowMs);
  const tokenNonce = ctx.random.uuid();
  const token = claimTokenFor(ctx.spaceId, id, tokenNonce, body.holderSession);
  const claim = newClaim(
    {
      id,
      spaceId: ctx.spaceId,
      claimKey: body.claimKey,
      scopeId: body.scopeId,
      holder: body.holder,
      holderSessionHash: hashClaimSecret(body.holderSession),
      tokenHash: hashClaimSecret(token),
      tokenNonce,
    },
    advanced,
    leaseUntil(body.leaseSeconds, ctx.nowMs, ctx.limits.maxLeaseSeconds),
    ctx.nowMs,
  );
  await ctx.tx.claims.advanceKey(advanced);
  await ctx.tx.claims.insert(claim);
  events.push(claimEvent(claim, eventTypes.claimAcquired, { leaseExpiresAt: isoFromMs(claim.leaseExpiresAt) }));
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, events);
  return { created: true, grant: claimGrantView(claim, token, body.holderSession) };
}

/** Extends the live claim's lease to now + leaseSeconds (capped by the space's maxLeaseSeconds). */
export async function renew(ctx: OpContext, id: string, body: ClaimRenewBody): Promise<ClaimView> {
  const claim = await lockLive(ctx, id, body.token);
  const next = renewedClaim(claim, leaseUntil(body.leaseSeconds, ctx.nowMs, ctx.limits.maxLeaseSeconds), ctx.nowMs);
  await ctx.tx.claims.update(next);
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [claimEvent(next, eventTypes.claimRenewed, { leaseExpiresAt: isoFromMs(next.leaseExpiresAt) })]);
  return claimView(next);
}

/** Ends the live claim: RELEASED, the key free at once. A repeat is LEASE_LOST (the token is no longer live). */
export async function release(ctx: OpContext, id: string, body: ClaimReleaseBody): Promise<ClaimView> {
  const claim = await lockLive(ctx, id, body.token);
  const next = releasedClaim(claim, ctx.nowMs);
  await ctx.tx.claims.update(next);
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [claimEvent(next, eventTypes.claimReleased)]);
  return claimView(next);
}

/**
 * Releases up to `limit` HELD claims under `scopeId` without their tokens (a run's cancel,
 * runs/service.ts), each with claim.released naming `reason`; answers how many. Their holders'
 * tokens die: a later renew or release is LEASE_LOST, and the fencing token tells downstream
 * systems the claim is over. The scope's claims are found through claims_by_created, filtered.
 */
export async function releaseInScope(ctx: OpContext, scopeId: string, limit: number, reason: string): Promise<number> {
  const held = await ctx.tx.claims.list(ctx.spaceId, { claimKey: null, scopeId, states: ['HELD'] }, null, limit);
  for (const listed of held) {
    const claim = await ctx.tx.claims.get(ctx.spaceId, listed.id, { forUpdate: true });
    if (claim?.state !== 'HELD') continue; // ended since it was listed
    // Still HELD but its lease ran out before the sweep came by: it was never the run's to
    // release. It ends EXPIRED here, with claim.expired, as the sweep would have ended it (the
    // simulator found a cancel answering 500 on releasing one).
    const next = claim.leaseExpiresAt <= ctx.nowMs ? expiredClaim(claim, ctx.nowMs) : releasedClaim(claim, ctx.nowMs);
    await ctx.tx.claims.update(next);
    await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [next.state === 'EXPIRED' ? expiredEvent(next, null) : claimEvent(next, eventTypes.claimReleased, { reason })]);
  }
  return held.length;
}

/** Locks the claim and checks that `token` is its live claim: LEASE_LOST otherwise. */
async function lockLive(ctx: OpContext, id: string, token: string): Promise<Claim> {
  const claim = await ctx.tx.claims.get(ctx.spaceId, id, { forUpdate: true });
  if (!claim) throw notFound('claim');
  if (!holdsClaim(claim, token, ctx.nowMs)) {
    const why = claim.state !== 'HELD' ? `the claim is ${claim.state}` : claim.leaseExpiresAt <= ctx.nowMs ? 'its lease ran out' : 'the token is not this claim\'s';
    throw new BatonError('LEASE_LOST', `this token is not the live claim ${id} of claimKey ${claim.claimKey}: ${why}`);
  }
  return claim;
}

/**
 * The expiry sweep (server/src/host/background.ts): HELD claims of any space whose lease ran out
 * become EXPIRED, each with claim.expired. Rows are taken with SKIP LOCKED, so several servers
 * sweep at once; a claim an acquire already replaced is EXPIRED by then and is not taken again.
 * Returns how many it took.
 */
export async function expireLeases(tx: Tx, nowMs: number, limit: number): Promise<number> {
  const due = await tx.claims.claimExpired(nowMs, limit);
  for (const claim of due) {
    const ended = expiredClaim(claim, nowMs);
    await tx.claims.update(ended);
    await tx.events.append(ended.spaceId, nowMs, [expiredEvent(ended, null)]);
  }
  return due.length;
}

export async function getClaim(tx: Tx, spaceId: string, id: string): Promise<ClaimView> {
  const claim = await tx.claims.get(spaceId, id);
  if (!claim) throw notFound('claim');
  return claimView(claim);
}

export interface ClaimListRequest {
  claimKey: string | undefined;
  scopeId: string | undefined;
  /** Only claims in one of these states; all when undefined. */
  states: readonly ClaimState[] | undefined;
  cursor: string | undefined;
  limit: number;
}

/** Claims oldest first (createdAt, then id), optionally filtered by key, scope and state. */
export async function listClaims(tx: Tx, spaceId: string, request: ClaimListRequest): Promise<Page<ClaimView>> {
  const after = request.cursor === undefined ? null : decodePositionCursor(request.cursor);
  const filter = { claimKey: request.claimKey ?? null, scopeId: request.scopeId ?? null, states: request.states ?? null };
  const rows = await tx.claims.list(spaceId, filter, after, request.limit + 1);
  const page = rows.slice(0, request.limit);
  const last = page.at(-1);
  return { items: page.map(claimView), nextCursor: rows.length > request.limit && last ? encodePositionCursor(last) : null };
}

/** Every claim event has the claim as its aggregate and carries its key, holder and fencing token. */
function claimEvent(c: Claim, type: string, data: Record<string, unknown> = {}): NewEvent {
  return { type, aggregateType: 'claim', aggregateId: c.id, scopeId: c.scopeId, data: { claimKey: c.claimKey, holder: c.holder, fencingToken: c.fencingToken, ...data } };
}

/** `replacedBy`: the claim that took the key in the same transaction, or null when the sweep ended it. */
function expiredEvent(c: Claim, replacedBy: string | null): NewEvent {
  return claimEvent(c, eventTypes.claimExpired, { leaseExpiresAt: isoFromMs(c.leaseExpiresAt), replacedBy });
}
