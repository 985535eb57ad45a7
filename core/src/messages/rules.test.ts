import { describe, expect, it } from 'vitest';
import { InvariantViolation } from '../assert';
import { SeededRandom } from '../random';
import { maxAttempts, type ClaimRequest, type Mailbox, type Message } from './model';
import { acked, assertMailbox, assertMessage, cancelled, claim, failedAttempt, hashToken, holdsLease, leaseUntil, newToken, payloadBytes, renewed } from './rules';

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

  it('holds a stored message to its invariants, each on its own', () => {
    const claimed = claimWith(ready, 'hash');
    const held = { claimed: {} as NonNullable<Message['claimed']> };
    for (const ok of [ready, claimed, { ...claimed, ...held }, { ...ready, attempt: maxAttempts - 1 }, { ...ready, state: 'DEAD' as const, attempt: maxAttempts }, { ...ready, taskId: 't', requirements: {} as NonNullable<Message['requirements']> }]) {
      expect(() => assertMessage(ok), JSON.stringify(ok)).not.toThrow();
    }
    const broken: Message[] = [
      { ...ready, attempt: -1 },
      { ...ready, attempt: 0.5 },
      { ...ready, state: 'DEAD', attempt: maxAttempts + 1 },
      { ...ready, attempt: maxAttempts },
      { ...claimed, tokenHash: null },
      { ...claimed, leaseExpiresAt: null },
      { ...claimed, holder: null },
      { ...claimed, holderSession: null },
      { ...claimed, attempt: 0 },
      { ...ready, tokenHash: 'hash' },
      { ...ready, leaseExpiresAt: T0 },
      { ...ready, ...held },
      { ...ready, requirements: {} as NonNullable<Message['requirements']> },
    ];
    for (const m of broken) expect(() => assertMessage(m), JSON.stringify(m)).toThrow(InvariantViolation);
  });

  it('claims only a READY message of the asked mailbox and scopes', () => {
    const c: ClaimRequest = { spaceId: 's', mailboxId: 'b', scopeIds: ['c'], holder: 'h', holderSession: 'x', tokenHash: 'hash', leaseExpiresAt: T0 + 30_000, nowMs: T0 };
    expect(claim(ready, c)).toMatchObject({ state: 'CLAIMED', attempt: 1, tokenHash: 'hash', holder: 'h', holderSession: 'x', leaseExpiresAt: T0 + 30_000, updatedAt: T0 });
    expect(() => claim(ready, { ...c, mailboxId: 'other' })).toThrow(InvariantViolation);
    expect(() => claim(ready, { ...c, scopeIds: ['elsewhere'] })).toThrow(InvariantViolation);
    expect(() => claim(claimWith(ready, 'hash'), c)).toThrow(InvariantViolation);
  });

  it('acks with the result and no lease left; a cancel clears the lease; only a CLAIMED message renews', () => {
    const claimed = claimWith(ready, 'hash');
    expect(acked(claimed, { ok: 1 }, T0 + 5)).toMatchObject({ state: 'ACKED', result: { ok: 1 }, tokenHash: null, leaseExpiresAt: null, claimed: null, updatedAt: T0 + 5 });
    expect(cancelled(claimed, T0 + 5)).toMatchObject({ state: 'CANCELLED', tokenHash: null, leaseExpiresAt: null, updatedAt: T0 + 5 });
    expect(renewed(claimed, T0 + 90_000, T0 + 5)).toMatchObject({ state: 'CLAIMED', leaseExpiresAt: T0 + 90_000, updatedAt: T0 + 5 });
    expect(() => renewed(ready, T0 + 90_000, T0 + 5)).toThrow(InvariantViolation);
    expect(() => failedAttempt(ready, true, T0 + 5)).toThrow(InvariantViolation);
  });

  it('stores a token as the hex of its SHA-256, and counts a payload in UTF-8 bytes of its JSON, absent as null', () => {
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(payloadBytes(undefined)).toBe(4);
    expect(payloadBytes({ a: 1 })).toBe(7);
    expect(payloadBytes('é')).toBe(4);
  });

  it('holds a mailbox to a backlog limit of at least one', () => {
    const box: Mailbox = { id: 'b', spaceId: 's', name: 'n', mode: 'WORK', recipientId: null, backlogLimit: 1, createdAt: T0, updatedAt: T0 };
    expect(() => assertMailbox(box)).not.toThrow();
    expect(() => assertMailbox({ ...box, backlogLimit: 0 })).toThrow(InvariantViolation);
    expect(() => assertMailbox({ ...box, backlogLimit: 1.5 })).toThrow(InvariantViolation);
  });
});
