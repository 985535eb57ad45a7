import { describe, expect, it } from 'vitest';
import { BatonError } from '../errors';
import type { Claim, ClaimKeyRow } from './model';
import { advanceFencing, claimTokenFor, decideAcquire, expiredClaim, hashClaimSecret, holdsClaim, newClaim, releasedClaim, renewedClaim } from './rules';

const T0 = 1_700_000_000_000;
const key: ClaimKeyRow = { spaceId: 's', claimKey: 'k', lastFencingToken: 0, createdAt: T0, updatedAt: T0 };
const session = 'session-1';

function held(overrides: Partial<Claim> = {}): Claim {
  const id = 'c1';
  return newClaim(
    { id, spaceId: 's', claimKey: 'k', scopeId: 'scope', holder: 'h', holderSessionHash: hashClaimSecret(session), tokenHash: hashClaimSecret(claimTokenFor('s', id, 'n1', session)), tokenNonce: 'n1', ...overrides },
    advanceFencing(key, T0),
    T0 + 30_000,
    T0,
  );
}

describe('claim rules', () => {
  it('derives a token per claim from the session and a nonce: stable, and different for another claim, space, nonce or session', () => {
    const token = claimTokenFor('s', 'c1', 'n1', session);
    expect(claimTokenFor('s', 'c1', 'n1', session)).toBe(token);
    expect(new Set([token, claimTokenFor('s', 'c2', 'n1', session), claimTokenFor('t', 'c1', 'n1', session), claimTokenFor('s', 'c1', 'n2', session), claimTokenFor('s', 'c1', 'n1', 'session-2')]).size).toBe(5);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('decides an acquire: free, the same holder and session again, or CLAIM_HELD with holder and lease end', () => {
    const c = held();
    expect(decideAcquire(undefined, 'h', hashClaimSecret(session), T0)).toEqual({ kind: 'free', expired: undefined });
    expect(decideAcquire(c, 'h', hashClaimSecret(session), T0 + 29_999)).toEqual({ kind: 'same', claim: c });
    expect(decideAcquire(c, 'other', hashClaimSecret('x'), T0 + 30_000)).toEqual({ kind: 'free', expired: c });
    for (const [holder, s] of [['other', session], ['h', 'session-2']] as const) {
      try {
        decideAcquire(c, holder, hashClaimSecret(s), T0 + 1);
        expect.unreachable();
      } catch (error) {
        expect(error).toBeInstanceOf(BatonError);
        expect(error).toMatchObject({ code: 'CLAIM_HELD', details: { holder: 'h', leaseExpiresAt: new Date(T0 + 30_000).toISOString() } });
      }
    }
  });

  it('grows the fencing token by one and never past a safe integer', () => {
    expect(advanceFencing(key, T0).lastFencingToken).toBe(1);
    expect(advanceFencing({ ...key, lastFencingToken: 41 }, T0).lastFencingToken).toBe(42);
    expect(() => advanceFencing({ ...key, lastFencingToken: Number.MAX_SAFE_INTEGER }, T0)).toThrow();
    expect(() => advanceFencing({ ...key, lastFencingToken: -1 }, T0)).toThrow();
  });

  it('holds only with the live token: not another, not past the lease, not once ended', () => {
    const c = held();
    const token = claimTokenFor('s', 'c1', 'n1', session);
    expect(holdsClaim(c, token, T0 + 29_999)).toBe(true);
    expect(holdsClaim(c, 'nope', T0)).toBe(false);
    expect(holdsClaim(c, token, T0 + 30_000)).toBe(false);
    expect(holdsClaim(releasedClaim(c, T0 + 1), token, T0 + 2)).toBe(false);
  });

  it('moves a claim: renew and release only while live, expiry only once the lease ran out', () => {
    const c = held();
    expect(renewedClaim(c, T0 + 90_000, T0 + 10)).toMatchObject({ state: 'HELD', leaseExpiresAt: T0 + 90_000, updatedAt: T0 + 10 });
    expect(releasedClaim(c, T0 + 5)).toMatchObject({ state: 'RELEASED', endedAt: T0 + 5, leaseExpiresAt: T0 + 30_000 });
    expect(expiredClaim(c, T0 + 30_000)).toMatchObject({ state: 'EXPIRED', endedAt: T0 + 30_000 });
    expect(() => expiredClaim(c, T0 + 29_999)).toThrow();
    expect(() => renewedClaim(c, T0 + 90_000, T0 + 30_000)).toThrow();
    expect(() => releasedClaim(expiredClaim(c, T0 + 30_000), T0 + 30_000)).toThrow();
  });
});
