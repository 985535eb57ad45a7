import { describe, expect, it } from 'vitest';
import { InvariantViolation } from '../assert';
import { BatonError } from '../errors';
import { maxClaimKeyLength, type Claim, type ClaimKeyRow } from './model';
import { advanceFencing, assertClaim, claimTokenFor, decideAcquire, expiredClaim, hashClaimSecret, holdsClaim, newClaim, releasedClaim, renewedClaim } from './rules';

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
        expect(error).toMatchObject({ code: 'CLAIM_HELD', message: `claimKey k is held by h until ${new Date(T0 + 30_000).toISOString()}`, details: { holder: 'h', leaseExpiresAt: new Date(T0 + 30_000).toISOString() } });
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

  it('holds a stored claim to its invariants: a key of 1 to the most characters, a positive safe fencing token, endedAt exactly when not HELD, a lease ending after its creation', () => {
    const c = held();
    const released = releasedClaim(c, T0 + 1);
    for (const ok of [c, released, { ...c, claimKey: 'k'.repeat(maxClaimKeyLength) }, { ...c, leaseExpiresAt: c.createdAt + 1 }]) expect(() => assertClaim(ok)).not.toThrow();
    const broken: Claim[] = [
      { ...c, claimKey: '' },
      { ...c, claimKey: 'k'.repeat(maxClaimKeyLength + 1) },
      { ...c, fencingToken: 0 },
      { ...c, fencingToken: 1.5 },
      { ...c, endedAt: T0 + 1 },
      { ...released, endedAt: null },
      { ...c, leaseExpiresAt: c.createdAt },
    ];
    for (const b of broken) expect(() => assertClaim(b), JSON.stringify(b)).toThrow(InvariantViolation);
  });

  it('reads only a HELD claim as the key\'s holder', () => {
    expect(() => decideAcquire(releasedClaim(held(), T0 + 1), 'h', hashClaimSecret(session), T0 + 2)).toThrow(InvariantViolation);
  });

  it('keeps the key row\'s updatedAt when the clock reads earlier', () => {
    expect(advanceFencing({ ...key, updatedAt: T0 + 500 }, T0).updatedAt).toBe(T0 + 500);
    expect(advanceFencing(key, T0 + 500).updatedAt).toBe(T0 + 500);
  });

  it('fences a claim only with its own key row', () => {
    const fields = { id: 'c9', spaceId: 's', claimKey: 'k', scopeId: 'scope', holder: 'h', holderSessionHash: 'x', tokenHash: 'y', tokenNonce: 'n' };
    const row = advanceFencing(key, T0);
    expect(newClaim(fields, row, T0 + 1_000, T0)).toMatchObject({ fencingToken: 1, state: 'HELD', endedAt: null, createdAt: T0 });
    expect(() => newClaim({ ...fields, claimKey: 'other' }, row, T0 + 1_000, T0)).toThrow(InvariantViolation);
    expect(() => newClaim({ ...fields, spaceId: 'other' }, row, T0 + 1_000, T0)).toThrow(InvariantViolation);
  });

  it('renews, releases or expires only a HELD claim, and releases none at the instant its lease ends', () => {
    const c = held();
    const released = releasedClaim(c, T0 + 1);
    expect(() => renewedClaim(released, T0 + 90_000, T0 + 2)).toThrow(InvariantViolation);
    expect(() => releasedClaim(released, T0 + 2)).toThrow(InvariantViolation);
    expect(() => releasedClaim(c, T0 + 30_000)).toThrow(InvariantViolation);
    expect(() => expiredClaim(released, T0 + 30_000)).toThrow(InvariantViolation);
  });
});
