import { createHash } from 'node:crypto';
import { assert } from '../assert';
import type { Random } from '../random';
import type { ClaimedResources } from '../admission/model';
import { maxAttempts, type ClaimRequest, type Mailbox, type Message } from './model';

/**
 * Message states and leases as pure functions. A lease lives in the message row itself (token
 * hash, holder, expiry), so "at most one live lease per message" is structural, and these
 * functions are the only way a row moves between states.
 */


/**
 * Tokens are stored hashed: whoever can read the database (or a backup) cannot complete or nack
 * someone else's claim with what is stored. A token is 256 random bits, so one unsalted SHA-256
 * is enough; comparing hashes also keeps the comparison free of timing hints about the token.
 */
export function newToken(random: Random): { token: string; tokenHash: string } {
  const token = Buffer.from(random.bytes(32)).toString('base64url');
  return { token, tokenHash: hashToken(token) };
}

export const hashToken = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

export function assertMailbox(m: Mailbox): void {
  assert(Number.isSafeInteger(m.backlogLimit) && m.backlogLimit >= 1, `mailbox ${m.id}: backlogLimit ${m.backlogLimit}`);
}

/** The invariants of a stored message; every read and write in both stores checks them. */
export function assertMessage(m: Message): void {
  assert(Number.isSafeInteger(m.attempt) && m.attempt >= 0 && m.attempt <= maxAttempts, `message ${m.id}: attempt ${m.attempt} outside 0..${maxAttempts}`);
  const leased = m.tokenHash !== null || m.leaseExpiresAt !== null;
  if (m.state === 'CLAIMED') {
    assert(m.tokenHash !== null && m.leaseExpiresAt !== null && m.holder !== null && m.holderSession !== null, `message ${m.id}: CLAIMED without a complete lease`);
    assert(m.attempt >= 1, `message ${m.id}: CLAIMED with no attempt counted`);
  } else {
    assert(!leased, `message ${m.id}: ${m.state} still carries a lease`);
  }
  if (m.state === 'READY') assert(m.attempt < maxAttempts, `message ${m.id}: READY after ${m.attempt} attempts`);
  assert(m.claimed === null || m.state === 'CLAIMED', `message ${m.id}: ${m.state} still holds claimed resources`);
  assert(m.requirements === null || m.taskId !== null, `message ${m.id}: requirements on a plain message`);
}

/**
 * The claim of a READY message: the in-memory twin of the SQL store's one-statement claim, and
 * admission's claim of a candidate once its resources are held (`claimed`).
 */
export function claim(m: Message, c: ClaimRequest, claimed: ClaimedResources | null = null): Message {
  assert(m.state === 'READY' && m.mailboxId === c.mailboxId && c.scopeIds.includes(m.scopeId), `message ${m.id}: claim of a ${m.state} message`);
  const next: Message = {
    ...m,
    state: 'CLAIMED',
    attempt: m.attempt + 1,
    tokenHash: c.tokenHash,
    holder: c.holder,
    holderSession: c.holderSession,
    leaseExpiresAt: c.leaseExpiresAt,
    claimed,
    updatedAt: c.nowMs,
  };
  assertMessage(next);
  return next;
}

/**
 * Whether `token` is the live claim of `m` at `nowMs`. A token matches only the claim that
 * issued it: a later claim, a complete, a nack or an expiry replaces or clears the hash. A lease
 * past its expiry is lost even before the sweep has returned the message.
 */
export function holdsLease(m: Message, token: string, nowMs: number): boolean {
  return m.state === 'CLAIMED' && m.tokenHash === hashToken(token) && m.leaseExpiresAt !== null && m.leaseExpiresAt > nowMs;
}

const released = (m: Message, state: Message['state'], nowMs: number): Message => {
  const next: Message = { ...m, state, tokenHash: null, leaseExpiresAt: null, claimed: null, updatedAt: nowMs };
  assertMessage(next);
  return next;
};

export const renewed = (m: Message, leaseExpiresAt: number, nowMs: number): Message => {
  assert(m.state === 'CLAIMED', `message ${m.id}: renew of a ${m.state} message`);
  return { ...m, leaseExpiresAt, updatedAt: nowMs };
};

export const acked = (m: Message, result: unknown, nowMs: number): Message => ({ ...released(m, 'ACKED', nowMs), result });

/** A delivery cancelled with its task: its lease (if any) and claimed resources gone, so every token answers LEASE_LOST. */
export const cancelled = (m: Message, nowMs: number): Message => released(m, 'CANCELLED', nowMs);

/**
 * A failed attempt (a nack, or a lease that ran out): READY again while attempts remain and a
 * retry is wanted, otherwise DEAD. The maxAttempts-th failed attempt is DEAD.
 */
export function failedAttempt(m: Message, retry: boolean, nowMs: number): Message {
  assert(m.state === 'CLAIMED', `message ${m.id}: failed attempt of a ${m.state} message`);
  return released(m, retry && m.attempt < maxAttempts ? 'READY' : 'DEAD', nowMs);
}

/** The effective lease: leaseSeconds above the space's maxLeaseSeconds is shortened to it. */
export const leaseUntil = (leaseSeconds: number, nowMs: number, maxLeaseSeconds: number): number => nowMs + Math.min(leaseSeconds, maxLeaseSeconds) * 1000;

/** JSON bytes of a payload, as the size limit counts them. */
export const payloadBytes = (payload: unknown): number => Buffer.byteLength(JSON.stringify(payload ?? null), 'utf8');
