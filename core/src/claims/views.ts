import type { ClaimGrant, ClaimView } from '../schemas/claims';
import { isoFromMs } from '../time';
import type { Claim } from './model';

/** The claim as clients see it: never its token, nor its holderSession (only their hashes are stored). */
export function claimView(c: Claim): ClaimView {
  return {
    id: c.id,
    claimKey: c.claimKey,
    scopeId: c.scopeId,
    holder: c.holder,
    fencingToken: c.fencingToken,
    state: c.state,
    leaseExpiresAt: isoFromMs(c.leaseExpiresAt),
    endedAt: c.endedAt === null ? null : isoFromMs(c.endedAt),
    createdAt: isoFromMs(c.createdAt),
    updatedAt: isoFromMs(c.updatedAt),
  };
}

/** The claim as POST /claims answers it, with the token and the session the caller sent. */
export function claimGrantView(c: Claim, token: string, holderSession: string): ClaimGrant {
  return { ...claimView(c), token, holderSession };
}
