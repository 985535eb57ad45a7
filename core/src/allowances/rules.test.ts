import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvariantViolation } from '../assert';
import type { Allowance, AllowanceWaiter } from './model';
import { assertAllowance, grantFromHead, nextWakeAt, rollWindow, take, windowStartAt, withCooldown } from './rules';

const allowance = (over: Partial<Allowance> = {}): Allowance => ({
  id: 'a', spaceId: 's', name: 'q', unitsLimit: 10, windowSeconds: 60, windowStartsAt: 1_000, usedUnits: 0,
  cooldownUntil: null, cooldownReason: null, nextPosition: 1, wakeAt: null, createdAt: 1_000, updatedAt: 1_000, ...over,
});
const waiter = (position: number, units: number, expiresAt = 1e12): AllowanceWaiter => ({
  id: `w${position}`, spaceId: 's', allowanceId: 'a', position, scopeId: 'x', holder: 'h', units, state: 'WAITING',
  grantedAt: null, expiresAt, createdAt: 1_000, updatedAt: 1_000,
});

describe('window arithmetic', () => {
  it('aligns windows to createdAt, for any creation time, width and moment', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 40 }), fc.integer({ min: 1, max: 86_400 }), fc.integer({ min: 0, max: 2 ** 36 }), (createdAt, windowSeconds, elapsed) => {
        const now = createdAt + elapsed;
        const start = windowStartAt({ createdAt, windowSeconds }, now);
        const windowMs = windowSeconds * 1000;
        expect(start).toBeLessThanOrEqual(now);
        expect(now).toBeLessThan(start + windowMs);
        expect((start - createdAt) % windowMs).toBe(0);
      }),
    );
  });

  it('a rolled window starts empty; within one window nothing changes', () => {
    const a = allowance({ usedUnits: 7 });
    expect(rollWindow(a, 60_999)).toBe(a);
    expect(rollWindow(a, 61_000)).toMatchObject({ windowStartsAt: 61_000, usedUnits: 0 });
  });

  it('units used in a window never exceed the limit, over any sequence of takes and rolls', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ units: fc.integer({ min: 1, max: 10 }), advanceMs: fc.integer({ min: 0, max: 90_000 }) }), { maxLength: 60 }), (steps) => {
        let a = allowance();
        let now = 1_000;
        for (const step of steps) {
          now += step.advanceMs;
          a = rollWindow(a, now);
          if (a.usedUnits + step.units <= a.unitsLimit) a = take(a, step.units, now);
          assertAllowance(a);
          expect(a.windowStartsAt).toBe(windowStartAt(a, now));
        }
      }),
    );
  });

  it('the allowance check fails on a window over its limit (the checker bites)', () => {
    expect(() => assertAllowance(allowance({ usedUnits: 11 }))).toThrowError(InvariantViolation);
    expect(() => assertAllowance(allowance({ windowStartsAt: 1_500 }))).toThrowError(/aligned/);
  });

  it('the allowance check refuses negative use, and a window one width on is still aligned', () => {
    expect(() => assertAllowance(allowance({ usedUnits: -1 }))).toThrowError(InvariantViolation);
    expect(() => assertAllowance(allowance({ usedUnits: 10, windowStartsAt: 61_000 }))).not.toThrow();
  });

  it('refuses a moment before the allowance existed, and a window that would move back', () => {
    expect(() => windowStartAt(allowance(), 999)).toThrowError(InvariantViolation);
    expect(windowStartAt(allowance(), 1_000)).toBe(1_000);
    expect(() => rollWindow(allowance({ windowStartsAt: 121_000 }), 61_500)).toThrowError(InvariantViolation);
    expect(rollWindow(allowance({ usedUnits: 4 }), 61_000)).toMatchObject({ windowStartsAt: 61_000, usedUnits: 0 });
  });

  it('takes only what fits and never during a cooldown', () => {
    expect(take(allowance({ usedUnits: 4 }), 6, 2_000)).toMatchObject({ usedUnits: 10, updatedAt: 2_000 });
    expect(() => take(allowance({ usedUnits: 4 }), 7, 2_000)).toThrowError(InvariantViolation);
    expect(() => take(allowance({ cooldownUntil: 5_000 }), 1, 2_000)).toThrowError(InvariantViolation);
    expect(take(allowance({ cooldownUntil: 2_000 }), 1, 2_000).usedUnits).toBe(1);
  });
});

describe('serving the line', () => {
  it('grants from the head while units fit; the first that does not fit blocks the rest', () => {
    const pass = grantFromHead(allowance({ usedUnits: 2 }), [waiter(1, 5), waiter(2, 4), waiter(3, 1)], 2_000);
    expect(pass.granted.map((w) => w.id)).toEqual(['w1']);
    expect(pass.granted[0]).toMatchObject({ state: 'GRANTED', grantedAt: 2_000, updatedAt: 2_000 });
    expect(pass.allowance.usedUnits).toBe(7);
  });

  it('expired waiters leave the line wherever they stand and stop blocking it', () => {
    const pass = grantFromHead(allowance({ usedUnits: 9 }), [waiter(1, 5, 1_500), waiter(2, 1), waiter(3, 5, 1_900)], 2_000);
    expect(pass.expired.map((w) => w.id)).toEqual(['w1', 'w3']);
    expect(pass.expired[0]).toMatchObject({ state: 'EXPIRED', updatedAt: 2_000 });
    expect(pass.granted.map((w) => w.id)).toEqual(['w2']);
  });

  it('grants nothing while a cooldown runs, and a cooldown never shortens', () => {
    const cooled = withCooldown(allowance(), 30, 'provider', 1_000);
    expect(grantFromHead(cooled, [waiter(1, 1)], 2_000).granted).toEqual([]);
    expect(withCooldown(cooled, 5, null, 2_000)).toBe(cooled);
    expect(grantFromHead(cooled, [waiter(1, 1)], 31_000).granted).toHaveLength(1);
  });

  it('a cooldown ending no later than the running one leaves it, reason and all; a later one replaces it', () => {
    const cooled = withCooldown(allowance(), 30, 'provider', 1_000);
    expect(cooled).toMatchObject({ cooldownUntil: 31_000, cooldownReason: 'provider', updatedAt: 1_000 });
    expect(withCooldown(cooled, 29, 'other', 2_000)).toBe(cooled);
    expect(withCooldown(cooled, 30, 'other', 1_000)).toBe(cooled);
    expect(withCooldown(cooled, 31, 'other', 1_000)).toMatchObject({ cooldownUntil: 32_000, cooldownReason: 'other' });
  });

  it('a waiter whose wait ends at this very moment has expired', () => {
    const pass = grantFromHead(allowance(), [waiter(1, 1, 2_000)], 2_000);
    expect(pass.expired.map((w) => w.id)).toEqual(['w1']);
    expect(pass.granted).toEqual([]);
  });

  it('refuses a line out of order or holding a waiter that no longer waits', () => {
    expect(() => grantFromHead(allowance(), [waiter(2, 1), waiter(1, 1)], 2_000)).toThrowError(InvariantViolation);
    expect(() => grantFromHead(allowance(), [waiter(1, 1), waiter(1, 1)], 2_000)).toThrowError(InvariantViolation);
    expect(() => grantFromHead(allowance(), [{ ...waiter(1, 1), state: 'GRANTED' }], 2_000)).toThrowError(InvariantViolation);
  });

  it('over any line, grants are a prefix of the live waiters in order, within the limit', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 }), fc.array(fc.record({ units: fc.integer({ min: 1, max: 10 }), expired: fc.boolean() }), { maxLength: 20 }), (used, specs) => {
        const line = specs.map((s, i) => waiter(i + 1, s.units, s.expired ? 1_500 : 1e12));
        const pass = grantFromHead(allowance({ usedUnits: used }), line, 2_000);
        const live = line.filter((w) => w.expiresAt > 2_000).map((w) => w.id);
        expect(pass.granted.map((w) => w.id)).toEqual(live.slice(0, pass.granted.length));
        expect(pass.allowance.usedUnits).toBeLessThanOrEqual(10);
        const next = live[pass.granted.length];
        if (next) expect(pass.allowance.usedUnits + line.find((w) => w.id === next)!.units).toBeGreaterThan(10);
      }),
    );
  });

  it('wakes at the next window, the earliest expiry or the cooldown end; never with nobody waiting', () => {
    expect(nextWakeAt(allowance(), [], 2_000)).toBeNull();
    expect(nextWakeAt(allowance(), [waiter(1, 20, 30_000)], 2_000)).toBe(30_000);
    expect(nextWakeAt(allowance(), [waiter(1, 20)], 2_000)).toBe(61_000);
    expect(nextWakeAt(allowance({ cooldownUntil: 40_000 }), [waiter(1, 20)], 2_000)).toBe(40_000);
    expect(nextWakeAt(allowance({ cooldownUntil: 1_500 }), [waiter(1, 20)], 2_000)).toBe(61_000);
    expect(nextWakeAt(allowance({ cooldownUntil: 2_000 }), [waiter(1, 20)], 2_000)).toBe(61_000);
  });
});
