import { describe, expect, it } from 'vitest';
import { InvariantViolation } from '../assert';
import { maxBarrierTarget, type Barrier } from './model';
import { advanceEpoch, assertBarrier, cancelBarrier, decideArrival, newBarrier, stillWaiting } from './rules';

const fresh = (target: number): Barrier => newBarrier({ id: 'b', spaceId: 's', scopeId: 'x', target }, 0);

/** Counts `n` new arrivals and returns the barrier after them. */
function arrived(b: Barrier, n: number): Barrier {
  for (let i = 0; i < n; i++) {
    const outcome = decideArrival(b, false, undefined, i + 1);
    if (outcome.kind !== 'counted') throw new Error('expected a count');
    b = outcome.barrier;
  }
  return b;
}

const conflictNaming = (text: string) => expect.objectContaining({ code: 'CONFLICT', message: expect.stringContaining(text) });

describe('barrier rules', () => {
  it('a new barrier is WAITING in epoch 1 with no arrivals', () => {
    expect(fresh(3)).toMatchObject({ state: 'WAITING', epoch: 1, arrivals: 0, releasedAt: null });
  });

  it('counts new arrivals and releases exactly at the target', () => {
    const two = arrived(fresh(3), 2);
    expect(two).toMatchObject({ state: 'WAITING', arrivals: 2, releasedAt: null });
    const outcome = decideArrival(two, false, undefined, 50);
    expect(outcome).toMatchObject({ kind: 'counted', released: true, barrier: { state: 'RELEASED', arrivals: 3, releasedAt: 50 } });
  });

  it('an arrivalKey already counted replays, in every state', () => {
    const waiting = arrived(fresh(3), 1);
    expect(decideArrival(waiting, true, undefined, 9)).toEqual({ kind: 'replay' });
    expect(decideArrival(arrived(fresh(1), 1), true, undefined, 9)).toEqual({ kind: 'replay' });
    expect(decideArrival(cancelBarrier(waiting, 9)!, true, 1, 9)).toEqual({ kind: 'replay' });
  });

  it('a new arrivalKey on a RELEASED or CANCELLED barrier is CONFLICT naming the state', () => {
    expect(() => decideArrival(arrived(fresh(1), 1), false, undefined, 9)).toThrowError(conflictNaming('RELEASED'));
    expect(() => decideArrival(cancelBarrier(fresh(2), 9)!, false, undefined, 9)).toThrowError(conflictNaming('CANCELLED'));
  });

  it('a new arrivalKey naming another epoch is CONFLICT', () => {
    expect(() => decideArrival(fresh(2), false, 2, 9)).toThrowError(conflictNaming('epoch 1, not 2'));
    expect(decideArrival(fresh(2), false, 1, 9).kind).toBe('counted');
  });

  it('nextEpoch moves a RELEASED or CANCELLED barrier on and refuses a WAITING one', () => {
    const released = arrived(fresh(2), 2);
    expect(advanceEpoch(released, undefined, 7)).toMatchObject({ state: 'WAITING', epoch: 2, arrivals: 0, releasedAt: null, updatedAt: 7 });
    expect(advanceEpoch(cancelBarrier(fresh(2), 3)!, 1, 7)).toMatchObject({ state: 'WAITING', epoch: 2 });
    expect(() => advanceEpoch(fresh(2), undefined, 7)).toThrowError(conflictNaming('WAITING'));
  });

  it('nextEpoch naming an epoch already over changes nothing; naming a future one is CONFLICT', () => {
    const second = advanceEpoch(arrived(fresh(1), 1), 1, 7)!;
    expect(advanceEpoch(second, 1, 8)).toBeUndefined();
    expect(() => advanceEpoch(second, 3, 8)).toThrowError(conflictNaming('epoch 2, not 3'));
  });

  it('cancel moves WAITING to CANCELLED, repeats as a no-op, refuses RELEASED', () => {
    const cancelled = cancelBarrier(arrived(fresh(3), 1), 4)!;
    expect(cancelled).toMatchObject({ state: 'CANCELLED', arrivals: 1, updatedAt: 4 });
    expect(cancelBarrier(cancelled, 5)).toBeUndefined();
    expect(() => cancelBarrier(arrived(fresh(1), 1), 5)).toThrowError(conflictNaming('RELEASED'));
  });

  it('a long poll waits only while the epoch it names is WAITING', () => {
    expect(stillWaiting(fresh(2), undefined)).toBe(true);
    expect(stillWaiting(fresh(2), 1)).toBe(true);
    expect(stillWaiting(fresh(2), 2)).toBe(false);
    expect(stillWaiting(arrived(fresh(1), 1), undefined)).toBe(false);
  });

  it('assertions refuse a state that breaks the invariants', () => {
    const b = fresh(2);
    for (const broken of [
      { ...b, arrivals: 3 },
      { ...b, arrivals: 2 },
      { ...b, state: 'RELEASED' as const, arrivals: 1, releasedAt: 1 },
      { ...b, state: 'RELEASED' as const, arrivals: 2, releasedAt: null },
      { ...b, state: 'CANCELLED' as const, arrivals: 2 },
      { ...b, epoch: 0 },
      { ...b, target: 0 },
      { ...b, target: 100_001, arrivals: 0 },
      { ...b, arrivals: -1 },
    ]) {
      expect(() => assertBarrier(broken)).toThrow(InvariantViolation);
    }
  });
  it('holds a barrier\'s target to 1 up to the most, a whole number', () => {
    expect(() => assertBarrier(fresh(1))).not.toThrow();
    expect(() => assertBarrier(fresh(maxBarrierTarget))).not.toThrow();
    for (const target of [0, maxBarrierTarget + 1, 1.5]) expect(() => assertBarrier({ ...fresh(2), target }), String(target)).toThrow(InvariantViolation);
    // Released with nobody to wait for: only the target's own bound catches it.
    expect(() => assertBarrier({ ...fresh(2), target: 0, arrivals: 0, state: 'RELEASED', releasedAt: 1 })).toThrow(InvariantViolation);
  });
});
