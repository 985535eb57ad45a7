import { createHash } from 'node:crypto';
import { assert } from '../assert';
import { canonicalJson } from '../canonical-json';
import { conflict, validationFailed } from '../errors';
import { maxTimerDelaySeconds, timerRetryDelayMs, type Timer } from './model';

/**
 * Timer moves as pure functions over stored state. State moves only ARMED to FIRED or ARMED to
 * CANCELLED; every function here checks the invariants of what it returns, so a broken move is
 * a bug that fails loudly instead of committing.
 */
export function assertTimer(t: Timer): void {
  assert(t.timerKey.length >= 1 && t.timerKey.length <= 512, `timer ${t.id}: timerKey of ${t.timerKey.length} characters`);
  assert(t.dueAt >= t.fireAt, `timer ${t.id}: due at ${t.dueAt}, before its fireAt ${t.fireAt}`);
  // A FIRED timer names the message it sent; nothing else names one.
  assert((t.state === 'FIRED') === (t.firedAt !== null && t.firedMessageId !== null), `timer ${t.id}: ${t.state} with firedAt ${t.firedAt}, firedMessageId ${t.firedMessageId}`);
  assert(t.state === 'FIRED' || (t.firedAt === null && t.firedMessageId === null), `timer ${t.id}: ${t.state} carries a firing`);
  assert((t.state === 'CANCELLED') === (t.cancelledAt !== null), `timer ${t.id}: ${t.state} with cancelledAt ${t.cancelledAt}`);
}

/** A move from `from` may only leave ARMED: FIRED and CANCELLED are final. */
function assertMoveFromArmed(from: Timer, to: Timer): void {
  assert(from.state === 'ARMED', `timer ${from.id}: move from ${from.state} to ${to.state}`);
  assert(from.id === to.id && from.spaceId === to.spaceId && from.fingerprint === to.fingerprint, `timer ${from.id}: a move changed what the timer is`);
  assertTimer(to);
}

/**
 * The arm body's fingerprint: SHA-256 over canonical JSON of what it asked, with fireAt as an
 * instant (two spellings of one instant are one body) and delaySeconds as given. A retry of a
 * delaySeconds arm is therefore the same body even though now has moved on.
 */
export function timerFingerprint(body: { scopeId: string; mailboxId: string; payload: unknown; fireAtMs?: number | undefined; delaySeconds?: number | undefined }): string {
  const asked = { scopeId: body.scopeId, mailboxId: body.mailboxId, payload: body.payload ?? null, fireAtMs: body.fireAtMs ?? null, delaySeconds: body.delaySeconds ?? null };
  return createHash('sha256').update(canonicalJson(asked), 'utf8').digest('hex');
}

/**
 * When an arm fires: fireAt as given (one in the past fires at the next sweep), or now plus
 * delaySeconds. Either way at most maxTimerDelaySeconds ahead of now.
 */
export function fireAtOf(asked: { fireAtMs?: number | undefined; delaySeconds?: number | undefined }, nowMs: number): number {
  assert((asked.fireAtMs === undefined) !== (asked.delaySeconds === undefined), 'arm: exactly one of fireAt and delaySeconds (the schema checks it)');
  const fireAtMs = asked.fireAtMs ?? nowMs + asked.delaySeconds! * 1000;
  if (fireAtMs > nowMs + maxTimerDelaySeconds * 1000) throw validationFailed('fireAt', `must be at most ${maxTimerDelaySeconds} seconds (30 days) ahead`);
  return fireAtMs;
}

export function newTimer(fields: Pick<Timer, 'id' | 'spaceId' | 'timerKey' | 'scopeId' | 'mailboxId' | 'payload' | 'fireAt' | 'fingerprint'>, nowMs: number): Timer {
  const timer: Timer = { ...fields, dueAt: fields.fireAt, state: 'ARMED', firedAt: null, firedMessageId: null, cancelledAt: null, createdAt: nowMs, updatedAt: nowMs };
  assertTimer(timer);
  return timer;
}

/** A repeat arm of an existing timerKey: the same body answers the timer, in any state; another is CONFLICT. */
export function sameArm(existing: Timer, fingerprint: string): Timer {
  if (existing.fingerprint !== fingerprint) throw conflict(`timerKey ${existing.timerKey} is armed with another body (timer ${existing.id}, ${existing.state})`);
  return existing;
}

/** The firing: FIRED, naming the message it sent. Only the sweep fires, and only an ARMED timer due by nowMs. */
export function firedTimer(t: Timer, messageId: string, nowMs: number): Timer {
  assert(t.dueAt <= nowMs, `timer ${t.id}: fired at ${nowMs}, before it is due (${t.dueAt})`);
  const next: Timer = { ...t, state: 'FIRED', firedAt: nowMs, firedMessageId: messageId, updatedAt: nowMs };
  assertMoveFromArmed(t, next);
  return next;
}

/** A firing its mailbox has no room for: still ARMED, taken again by the sweep timerRetryDelayMs later. */
export function deferredTimer(t: Timer, nowMs: number): Timer {
  const next: Timer = { ...t, dueAt: Math.max(t.dueAt, nowMs + timerRetryDelayMs), updatedAt: nowMs };
  assertMoveFromArmed(t, next);
  return next;
}

/**
 * Cancels an ARMED timer. Undefined for an already CANCELLED one: a repeat changes nothing. A
 * FIRED timer has sent its message, which cannot be taken back: CONFLICT.
 */
export function cancelledTimer(t: Timer, nowMs: number): Timer | undefined {
  if (t.state === 'CANCELLED') return undefined;
  if (t.state === 'FIRED') throw conflict(`timer ${t.id} already FIRED (message ${t.firedMessageId}); a fired timer cannot be cancelled`);
  const next: Timer = { ...t, state: 'CANCELLED', cancelledAt: nowMs, updatedAt: nowMs };
  assertMoveFromArmed(t, next);
  return next;
}
