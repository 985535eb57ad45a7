import { describe, expect, it } from 'vitest';
import { InvariantViolation } from '../assert';
import { BatonError } from '../errors';
import { maxTimerDelaySeconds, timerRetryDelayMs, type Timer } from './model';
import { assertTimer, cancelledTimer, deferredTimer, fireAtOf, firedTimer, newTimer, sameArm, timerFingerprint } from './rules';

const T0 = 1_767_225_600_000;
const armed = (): Timer =>
  newTimer({ id: 't1', spaceId: 's', timerKey: 'k', scopeId: 'scope', mailboxId: 'box', payload: { a: 1 }, fireAt: T0 + 1_000, fingerprint: 'f' }, T0);

describe('timer rules', () => {
  it('moves ARMED to FIRED (naming its message) or to CANCELLED, and nowhere from there', () => {
    const fired = firedTimer(armed(), 'm1', T0 + 1_000);
    expect(fired).toMatchObject({ state: 'FIRED', firedAt: T0 + 1_000, firedMessageId: 'm1', cancelledAt: null });
    expect(() => firedTimer(fired, 'm2', T0 + 2_000)).toThrow(InvariantViolation);
    expect(() => cancelledTimer(fired, T0 + 2_000)).toThrow(BatonError);
    const cancelled = cancelledTimer(armed(), T0 + 5)!;
    expect(cancelled).toMatchObject({ state: 'CANCELLED', cancelledAt: T0 + 5 });
    expect(cancelledTimer(cancelled, T0 + 6)).toBeUndefined();
    expect(() => firedTimer(cancelled, 'm1', T0 + 1_000)).toThrow(InvariantViolation);
  });

  it('fires only when due; a deferral keeps it ARMED and moves its turn a retry delay on', () => {
    expect(() => firedTimer(armed(), 'm1', T0 + 999)).toThrow(InvariantViolation);
    const deferred = deferredTimer(armed(), T0 + 1_500);
    expect(deferred).toMatchObject({ state: 'ARMED', fireAt: T0 + 1_000, dueAt: T0 + 1_500 + timerRetryDelayMs });
    expect(() => firedTimer(deferred, 'm1', T0 + 1_500)).toThrow(InvariantViolation);
  });

  it('asserts the firing and the cancellation are set exactly in their states', () => {
    expect(() => assertTimer({ ...armed(), state: 'FIRED', firedAt: T0 })).toThrow(InvariantViolation);
    expect(() => assertTimer({ ...armed(), firedMessageId: 'm' })).toThrow(InvariantViolation);
    expect(() => assertTimer({ ...armed(), cancelledAt: T0 })).toThrow(InvariantViolation);
  });

  it('fingerprints the body as asked: key order does not matter, the asked time does', () => {
    const base = { scopeId: 's', mailboxId: 'b', payload: { x: 1, y: [1, 2] } };
    expect(timerFingerprint({ ...base, delaySeconds: 5 })).toBe(timerFingerprint({ mailboxId: 'b', payload: { y: [1, 2], x: 1 }, scopeId: 's', delaySeconds: 5 }));
    expect(timerFingerprint({ ...base, delaySeconds: 5 })).not.toBe(timerFingerprint({ ...base, delaySeconds: 6 }));
    expect(timerFingerprint({ ...base, delaySeconds: 5 })).not.toBe(timerFingerprint({ ...base, fireAtMs: 5 }));
    const t = { ...armed(), fingerprint: timerFingerprint({ ...base, delaySeconds: 5 }) };
    expect(sameArm(t, t.fingerprint)).toBe(t);
    expect(() => sameArm(t, timerFingerprint(base))).toThrow(BatonError);
  });

  it('resolves fireAt from a delay or an instant, at most 30 days ahead; the past is allowed', () => {
    expect(fireAtOf({ delaySeconds: 90 }, T0)).toBe(T0 + 90_000);
    expect(fireAtOf({ fireAtMs: T0 - 1 }, T0)).toBe(T0 - 1);
    expect(fireAtOf({ fireAtMs: T0 + maxTimerDelaySeconds * 1000 }, T0)).toBe(T0 + maxTimerDelaySeconds * 1000);
    expect(() => fireAtOf({ fireAtMs: T0 + maxTimerDelaySeconds * 1000 + 1 }, T0)).toThrow(BatonError);
  });

  it('holds a stored timer to its invariants: a key of 1 to 512 characters, due no earlier than it fires, a firing only when FIRED and complete', () => {
    const t = armed();
    const fired = firedTimer(t, 'm1', T0 + 1_000);
    for (const ok of [t, fired, { ...t, timerKey: 'k'.repeat(512) }, { ...t, dueAt: t.fireAt + 5 }]) expect(() => assertTimer(ok)).not.toThrow();
    const broken: Timer[] = [
      { ...t, timerKey: '' },
      { ...t, timerKey: 'k'.repeat(513) },
      { ...t, dueAt: t.fireAt - 1 },
      { ...fired, firedMessageId: null },
      { ...fired, firedAt: null },
      { ...t, firedAt: T0 },
      { ...t, state: 'CANCELLED', cancelledAt: T0, firedAt: T0 },
      { ...t, state: 'CANCELLED' },
    ];
    for (const b of broken) expect(() => assertTimer(b), JSON.stringify(b)).toThrow(InvariantViolation);
  });

  it('fingerprints the payload and the asked instant, as hex', () => {
    const base = { scopeId: 's', mailboxId: 'b' };
    expect(timerFingerprint({ ...base, payload: { a: 1 }, delaySeconds: 5 })).toMatch(/^[0-9a-f]{64}$/);
    expect(timerFingerprint({ ...base, payload: { a: 1 }, delaySeconds: 5 })).not.toBe(timerFingerprint({ ...base, payload: { a: 2 }, delaySeconds: 5 }));
    expect(timerFingerprint({ ...base, payload: { a: 1 }, fireAtMs: T0 })).not.toBe(timerFingerprint({ ...base, payload: { a: 1 }, fireAtMs: T0 + 1 }));
    expect(timerFingerprint({ ...base, payload: undefined, delaySeconds: 5 })).toBe(timerFingerprint({ ...base, payload: null, delaySeconds: 5 }));
  });

  it('takes exactly one of fireAt and delaySeconds, and names fireAt when it is too far ahead', () => {
    expect(() => fireAtOf({ fireAtMs: T0, delaySeconds: 5 }, T0)).toThrow(InvariantViolation);
    expect(() => fireAtOf({}, T0)).toThrow(InvariantViolation);
    expect(() => fireAtOf({ delaySeconds: maxTimerDelaySeconds + 1 }, T0)).toThrowError(expect.objectContaining({ code: 'VALIDATION_FAILED', details: [{ path: 'fireAt', message: `must be at most ${maxTimerDelaySeconds} seconds (30 days) ahead` }] }));
  });

  it('says which timer holds the key with another body, and which message a fired timer sent', () => {
    const t = armed();
    expect(() => sameArm(t, 'g')).toThrowError('timerKey k is armed with another body (timer t1, ARMED)');
    expect(() => cancelledTimer(firedTimer(t, 'm1', T0 + 1_000), T0 + 2_000)).toThrowError('timer t1 already FIRED (message m1); a fired timer cannot be cancelled');
  });
});
