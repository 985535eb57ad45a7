import { describe, expect, it } from 'vitest';
import { BatonError } from '../errors';
import { InvariantViolation } from '../assert';
import type { Budget, Reservation } from './model';
import { assertConservation, reserveFunds, settleFunds, voidRemainder } from './rules';

const budget = (limit: bigint): Budget => ({
  id: 'b', spaceId: 's', name: 'llm', currency: 'USD', scale: 2,
  limitMinor: limit, availableMinor: limit, reservedMinor: 0n, settledMinor: 0n, createdAt: 0, updatedAt: 0,
});
const reservation = (amount: bigint): Reservation => ({
  id: 'r', spaceId: 's', budgetId: 'b', scopeId: 'x', holder: 'h', amountMinor: amount, settledMinor: 0n,
  remainingMinor: amount, state: 'ACTIVE', settleBy: null, overdueAt: null, createdAt: 0, updatedAt: 0,
});

describe('budget rules', () => {
  it('reserve moves funds from available to reserved', () => {
    const b = reserveFunds(budget(1000n), 300n, 1);
    expect([b.availableMinor, b.reservedMinor, b.settledMinor]).toEqual([700n, 300n, 0n]);
  });

  it('reserve beyond available is INSUFFICIENT_BUDGET', () => {
    expect(() => reserveFunds(budget(100n), 101n, 1)).toThrowError(expect.objectContaining({ code: 'INSUFFICIENT_BUDGET' }));
  });

  it('a partial settle keeps the reservation ACTIVE with the rest reserved', () => {
    const b = reserveFunds(budget(1000n), 300n, 1);
    const next = settleFunds(b, reservation(300n), 100n, 2);
    expect(next.reservation).toMatchObject({ state: 'ACTIVE', settledMinor: 100n, remainingMinor: 200n });
    expect([next.budget.availableMinor, next.budget.reservedMinor, next.budget.settledMinor]).toEqual([700n, 200n, 100n]);
  });

  it('a settle of the whole remainder makes the reservation SETTLED', () => {
    const b = reserveFunds(budget(1000n), 300n, 1);
    expect(settleFunds(b, reservation(300n), 300n, 2).reservation.state).toBe('SETTLED');
  });

  it('an over-settle takes the excess from available', () => {
    const b = reserveFunds(budget(1000n), 300n, 1);
    const next = settleFunds(b, reservation(300n), 450n, 2);
    expect(next.reservation).toMatchObject({ state: 'SETTLED', settledMinor: 450n, remainingMinor: 0n });
    expect([next.budget.availableMinor, next.budget.reservedMinor, next.budget.settledMinor]).toEqual([550n, 0n, 450n]);
  });

  it('an over-settle that available cannot cover is INSUFFICIENT_BUDGET and changes nothing', () => {
    const b = reserveFunds(budget(300n), 300n, 1);
    expect(() => settleFunds(b, reservation(300n), 301n, 2)).toThrowError(expect.objectContaining({ code: 'INSUFFICIENT_BUDGET' }));
  });

  it('void releases the remainder and makes the reservation VOIDED', () => {
    const b = reserveFunds(budget(1000n), 300n, 1);
    const settled = settleFunds(b, reservation(300n), 100n, 2);
    const voided = voidRemainder(settled.budget, settled.reservation, 3);
    expect(voided.releasedMinor).toBe(200n);
    expect(voided.reservation).toMatchObject({ state: 'VOIDED', remainingMinor: 0n, settledMinor: 100n });
    expect([voided.budget.availableMinor, voided.budget.reservedMinor, voided.budget.settledMinor]).toEqual([900n, 0n, 100n]);
  });

  it('settle or void of a closed reservation is CONFLICT naming its state', () => {
    const closed = { ...reservation(10n), state: 'SETTLED' as const, remainingMinor: 0n, settledMinor: 10n };
    expect(() => settleFunds(budget(100n), closed, 1n, 1)).toThrowError(new BatonError('CONFLICT', 'reservation r is SETTLED'));
    expect(() => voidRemainder(budget(100n), closed, 1)).toThrowError(/is SETTLED/);
  });

  it('exact at 18 digits: no rounding, no overflow', () => {
    const max = 999_999_999_999_999_999n;
    const b = reserveFunds(budget(max), max - 1n, 1);
    const next = settleFunds(b, reservation(max - 1n), max, 2);
    expect(next.budget).toMatchObject({ availableMinor: 0n, reservedMinor: 0n, settledMinor: max });
  });

  it('the conservation check fails on a broken balance (the checker bites)', () => {
    const broken = { ...budget(100n), settledMinor: 1n };
    expect(() => assertConservation(broken)).toThrowError(InvariantViolation);
    expect(() => assertConservation({ ...budget(100n), availableMinor: 101n, reservedMinor: -1n })).toThrowError(/negative/);
  });
});
