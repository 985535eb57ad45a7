/** Claims (docs/design/0020-claims.md): an exclusive, leased hold on a claimKey in a space. Times are epoch ms. */
export const claimStates = ['HELD', 'RELEASED', 'EXPIRED'] as const;
export type ClaimState = (typeof claimStates)[number];

/** Longest claimKey (docs/api.md "Fixed bounds": 1 to 512 characters). */
export const maxClaimKeyLength = 512;

/** Lease bounds of POST /claims and renew (docs/api.md "Fixed bounds"); the space's maxLeaseSeconds may shorten it. */
export const claimLeaseBounds = { minSeconds: 5, maxSeconds: 600, defaultSeconds: 30 } as const;

export interface Claim {
  id: string;
  spaceId: string;
  claimKey: string;
  scopeId: string;
  /** The stable logical worker that claimed (docs/api.md "Authentication and permissions": worker identity). */
  holder: string;
  /**
   * SHA-256 of the holderSession. The session is what lets a claimant get its token back (a
   * re-claim by the same holder and session answers the same token), so, like the token, it is
   * never stored or shown in the clear: whoever reads the database cannot rebuild a token.
   */
  holderSessionHash: string;
  /** SHA-256 of the token (see rules.ts claimTokenFor); the token itself is only in POST /claims replies. */
  tokenHash: string;
  /**
   * A random value drawn when the claim is made, one of the token's inputs, never shown by the
   * API: claim ids are public and a holderSession may be too (message events show theirs), so
   * without it anyone knowing both could compute the token.
   */
  tokenNonce: string;
  /**
   * The key's sequence number of this claim: one more than the claim of the key before it, ever
   * (ClaimKeyRow.lastFencingToken), so a downstream system can refuse writes of an older holder.
   */
  fencingToken: number;
  state: ClaimState;
  /** When the lease runs out (HELD), or ran out or stood when the claim ended (RELEASED, EXPIRED). */
  leaseExpiresAt: number;
  /** When the claim was released or marked EXPIRED; null while HELD. */
  endedAt: number | null;
  createdAt: number;
  updatedAt: number;
}

/**
 * One row per (space, claimKey) ever claimed: the key's fencing sequence. It outlives every
 * claim of the key (release, expiry, retention of claim rows), so a fencing token never
 * repeats; and it is the row every acquire of the key locks first, which puts acquires of one
 * key one after another.
 */
export interface ClaimKeyRow {
  spaceId: string;
  claimKey: string;
  /** The fencing token of the key's newest claim; 0 before the first. Only ever grows. */
  lastFencingToken: number;
  createdAt: number;
  updatedAt: number;
}

/** GET /claims filters; null: no filter on that field. */
export interface ClaimFilter {
  claimKey: string | null;
  scopeId: string | null;
  states: readonly ClaimState[] | null;
}

/** Position in the claim list, which is ordered by (createdAt, id). */
export interface ClaimListPosition {
  createdAt: number;
  id: string;
}
