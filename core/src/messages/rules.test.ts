import { describe, expect, it } from 'vitest';
import { InvariantViolation } from '../assert';
import { SeededRandom } from '../random';
import type { ClaimRequest, Message } from './model';
import { acked, assertMessage, claim, failedAttempt, holdsLease, leaseUntil, newToken } from './rules';

const T0 = 1_700_000_000_000;
const ready: Message = {
  id: 'm', spaceId: 's', mailboxId: 'b', seq: 1, scopeId: 'c', payload: 1, workKey: null, deadline: null, taskId: null, state: 'READY', attempt: 0,
  tokenHash: null, holder: null, holderSession: null, leaseExpiresAt: null, result: null, requirements: null, claimed: null, createdAt: T0, updatedAt: T0,
};
const random = new SeededRandom(1);
const claimWith = (m: Message, tokenHash: string): Message => {
  const c: ClaimRequest = { spaceId: 's', mailboxId: 'b', scopeIds: ['c'], holder: 'h', holderSession: 'x', tokenHash, leaseExpiresAt: T0 + 30_000, nowMs: T0 };
  return claim(m, c);
};

describe('message rules', () => {
  it('a token matches only its own claim, and only while the lease runs', () => {
    const first = newToken(random);
    const claimed = claimWith(ready, first.tokenHash);
    expect(holdsLease(claimed, first.token, T0)).toBe(true);
    expect(holdsLease(claimed, first.token, T0 + 30_000)).toBe(false);
    const second = newToken(random);
    const reclaimed = claimWith(failedAttempt(claimed, true, T0), second.tokenHash);
    expect(holdsLease(reclaimed, first.token, T0)).toBe(false);
    expect(holdsLease(reclaimed, second.token, T0)).toBe(true);
    expect(holdsLease(acked(reclaimed, null, T0), second.token, T0)).toBe(false);
  });

  it('the 5th failed attempt is DEAD; no retry is DEAD at once', () => {
    let m = ready;
    for (let i = 1; i <= 5; i++) {
      m = failedAttempt(claimWith(m, newToken(random).tokenHash), true, T0);
      expect(m.state).toBe(i < 5 ? 'READY' : 'DEAD');
    }
    expect(failedAttempt(claimWith(ready, 'h'), false, T0).state).toBe('DEAD');
  });

  it('asserts one lease exactly while CLAIMED, attempts at most 5', () => {
    expect(() => assertMessage({ ...ready, tokenHash: 'x' })).toThrow(InvariantViolation);
    expect(() => assertMessage({ ...ready, state: 'CLAIMED', attempt: 1 })).toThrow(InvariantViolation);
    expect(() => assertMessage({ ...ready, state: 'DEAD', attempt: 6 })).toThrow(InvariantViolation);
    expect(() => claim({ ...ready, state: 'ACKED' }, { spaceId: 's', mailboxId: 'b', scopeIds: ['c'], holder: 'h', holderSession: 'x', tokenHash: 't', leaseExpiresAt: T0, nowMs: T0 })).toThrow(InvariantViolation);
  });

  it('shortens a lease to maxLeaseSeconds', () => {
    expect(leaseUntil(30, T0, 600)).toBe(T0 + 30_000);
    expect(leaseUntil(10_000, T0, 600)).toBe(T0 + 600_000);
    expect(leaseUntil(30, T0, 10)).toBe(T0 + 10_000);
  });
});
