import { createHmac } from 'node:crypto';
import { assert } from '../assert';
import { BatonError } from '../errors';
import { hashToken } from '../messages/rules';
import { isoFromMs } from '../time';
import { maxClaimKeyLength, type Claim, type ClaimKeyRow } from './model';

/**
 * Claim moves as pure functions over stored state; each checks the invariants, so a broken
 * claim or fencing sequence is a bug that fails loudly instead of committing. That at most one
 * claim of a key is HELD is kept by the service (every acquire locks the key row first) and
 * made impossible by a unique index over the HELD claims of a key.
 */

export function assertClaim(c: Claim): void {
  assert(c.claimKey.length >= 1 && c.claimKey.length <= maxClaimKeyLength, `claim ${c.id}: claimKey of ${c.claimKey.length} characters`);
  assert(Number.isSafeInteger(c.fencingToken) && c.fencingToken >= 1, `claim ${c.id}: fencingToken ${c.fencingToken} is not a positive safe integer`);
  assert((c.state === 'HELD') === (c.endedAt === null), `claim ${c.id}: ${c.state} with endedAt ${c.endedAt}`);
  assert(c.leaseExpiresAt > c.createdAt, `claim ${c.id}: lease ends at ${c.leaseExpiresAt}, not after its creation at ${c.createdAt}`);
}

export function assertClaimKeyRow(k: ClaimKeyRow): void {
  assert(Number.isSafeInteger(k.lastFencingToken) && k.lastFencingToken >= 0, `claim key ${k.claimKey}: lastFencingToken ${k.lastFencingToken}`);
}

/**
 * The token of a claim: HMAC-SHA256 keyed by the holderSession over the claim's space, id and
 * tokenNonce. Derived, not random, so that a re-claim by the same holder and session (see
 * docs/design/0020-claims.md: 200, the same claim) answers the same token although only hashes are stored: the session,
 * which only the claimant has in the clear, is the one input the database lacks; the nonce, which
 * the API never shows, is the one input an API reader lacks (claim ids are public, and a session
 * name may be too). Each claim has a fresh id and nonce, so a stale token never matches a later claim.
 */
export function claimTokenFor(spaceId: string, claimId: string, tokenNonce: string, holderSession: string): string {
  return createHmac('sha256', holderSession).update(`baton-claim-token\u0000${spaceId}\u0000${claimId}\u0000${tokenNonce}`, 'utf8').digest('base64url');
}

/** What the store keeps of a holderSession or token: its SHA-256 (messages/rules.ts hashToken). */
export const hashClaimSecret = hashToken;

/** CLAIM_HELD, naming who holds the key and until when (docs/design/0020-claims.md: details is the object `{holder, leaseExpiresAt}`). */
export function claimHeld(held: Claim): BatonError {
  const leaseExpiresAt = isoFromMs(held.leaseExpiresAt);
  return new BatonError('CLAIM_HELD', `claimKey ${held.claimKey} is held by ${held.holder} until ${leaseExpiresAt}`, { holder: held.holder, leaseExpiresAt });
}

export type AcquireDecision =
  /** The same holder and session hold the key live: answer that claim, change nothing. */
  | { kind: 'same'; claim: Claim }
  /** The key is free; `expired` is a HELD claim whose lease ran out that the sweep has not yet marked. */
  | { kind: 'free'; expired: Claim | undefined };

/**
 * Decides an acquire from the key's HELD claim, read under the key's lock. A lease that ran out
 * frees the key at once, swept or not: what counts is the injected clock, as for messages. A
 * live claim of another holder or session is CLAIM_HELD.
 */
export function decideAcquire(held: Claim | undefined, holder: string, holderSessionHash: string, nowMs: number): AcquireDecision {
  if (held === undefined) return { kind: 'free', expired: undefined };
  assert(held.state === 'HELD', `claim ${held.id}: ${held.state} read as the key's held claim`);
  if (held.leaseExpiresAt <= nowMs) return { kind: 'free', expired: held };
  if (held.holder === holder && held.holderSessionHash === holderSessionHash) return { kind: 'same', claim: held };
  throw claimHeld(held);
}

/** The key's next fencing token: one more than the last, ever. */
export function advanceFencing(k: ClaimKeyRow, nowMs: number): ClaimKeyRow {
  assertClaimKeyRow(k);
  const next: ClaimKeyRow = { ...k, lastFencingToken: k.lastFencingToken + 1, updatedAt: Math.max(k.updatedAt, nowMs) };
  assert(next.lastFencingToken > k.lastFencingToken && Number.isSafeInteger(next.lastFencingToken), `claim key ${k.claimKey}: fencing token would not grow past ${k.lastFencingToken}`);
  return next;
}

export function newClaim(
  fields: Pick<Claim, 'id' | 'spaceId' | 'claimKey' | 'scopeId' | 'holder' | 'holderSessionHash' | 'tokenHash' | 'tokenNonce'>,
  key: ClaimKeyRow,
  leaseExpiresAt: number,
  nowMs: number,
): Claim {
  assert(key.spaceId === fields.spaceId && key.claimKey === fields.claimKey, `claim ${fields.id}: fenced by the key row of another key`);
  const claim: Claim = { ...fields, fencingToken: key.lastFencingToken, state: 'HELD', leaseExpiresAt, endedAt: null, createdAt: nowMs, updatedAt: nowMs };
  assertClaim(claim);
  return claim;
}

/**
 * Whether `token` is the live claim `c` at `nowMs`: HELD, its token, and its lease not run out.
 * A lease past its expiry is lost even before the sweep marks it EXPIRED.
 */
export function holdsClaim(c: Claim, token: string, nowMs: number): boolean {
  return c.state === 'HELD' && c.tokenHash === hashClaimSecret(token) && c.leaseExpiresAt > nowMs;
}

export function renewedClaim(c: Claim, leaseExpiresAt: number, nowMs: number): Claim {
  assert(c.state === 'HELD' && c.leaseExpiresAt > nowMs, `claim ${c.id}: renew of a claim that is not live`);
  const next: Claim = { ...c, leaseExpiresAt, updatedAt: nowMs };
  assertClaim(next);
  return next;
}

/** A released claim keeps the lease it had: leaseExpiresAt shows how long it could have lasted. */
export function releasedClaim(c: Claim, nowMs: number): Claim {
  assert(c.state === 'HELD' && c.leaseExpiresAt > nowMs, `claim ${c.id}: release of a claim that is not live`);
  const next: Claim = { ...c, state: 'RELEASED', endedAt: nowMs, updatedAt: nowMs };
  assertClaim(next);
  return next;
}

export function expiredClaim(c: Claim, nowMs: number): Claim {
  assert(c.state === 'HELD' && c.leaseExpiresAt <= nowMs, `claim ${c.id}: expiry of a ${c.state} claim whose lease ends at ${c.leaseExpiresAt} (now ${nowMs})`);
  const next: Claim = { ...c, state: 'EXPIRED', endedAt: nowMs, updatedAt: nowMs };
  assertClaim(next);
  return next;
}
