import { describe, expect, it } from 'vitest';
import { BatonError } from '../errors';
import { InvariantViolation } from '../assert';
import type { Budget, Reservation } from './model';
import { assertConservation, assertReservation, reserveFunds, settleFunds, voidRemainder } from './rules';

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
    expect(() => reserveFunds(budget(100n), 101n, 1)).toThrowError(expect.objectContaining({ code: 'INSUFFICIENT_BUDGET', message: 'budget llm has 100 available, 101 requested' }));
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

  it('each conservation check bites on its own: negative available, reserved or settled, a limit past 18 digits, or a sum off the limit', () => {
    expect(() => assertConservation(budget(100n))).not.toThrow();
    const broken: Budget[] = [
      { ...budget(100n), availableMinor: -1n, reservedMinor: 101n },
      { ...budget(100n), availableMinor: 101n, reservedMinor: -1n },
      { ...budget(100n), availableMinor: 101n, settledMinor: -1n },
      budget(1_000_000_000_000_000_000n),
      { ...budget(100n), availableMinor: 99n },
    ];
    for (const b of broken) expect(() => assertConservation(b), String(b.availableMinor)).toThrowError(InvariantViolation);
  });

  it('a reservation must keep its funds: no negative amounts, no remainder once closed, nothing lost unless voided', () => {
    const r = reservation(100n);
    for (const ok of [r, { ...r, settledMinor: 150n, remainingMinor: 0n, state: 'SETTLED' as const }, { ...r, settledMinor: 10n, remainingMinor: 0n, state: 'VOIDED' as const }]) {
      expect(() => assertReservation(ok)).not.toThrow();
    }
    const broken: Reservation[] = [
      { ...r, remainingMinor: -1n, settledMinor: 101n },
      { ...r, settledMinor: -1n, remainingMinor: 101n },
      { ...r, state: 'SETTLED', remainingMinor: 1n, settledMinor: 99n },
      { ...r, remainingMinor: 50n, settledMinor: 10n },
    ];
    for (const b of broken) expect(() => assertReservation(b), `${b.state} ${b.settledMinor} ${b.remainingMinor}`).toThrowError(InvariantViolation);
  });

  it('refuses a reserve or settle of nothing or less as a bug', () => {
    expect(() => reserveFunds(budget(100n), 0n, 1)).toThrowError(InvariantViolation);
    expect(() => reserveFunds(budget(100n), -1n, 1)).toThrowError(InvariantViolation);
    const b = reserveFunds(budget(1000n), 300n, 1);
    expect(() => settleFunds(b, reservation(300n), 0n, 2)).toThrowError(InvariantViolation);
    expect(() => settleFunds(b, reservation(300n), -5n, 2)).toThrowError(InvariantViolation);
  });

  it('reserves all that is available, to the last unit', () => {
    expect(reserveFunds(budget(100n), 100n, 1)).toMatchObject({ availableMinor: 0n, reservedMinor: 100n });
  });

  it('a settle against a budget that does not balance fails instead of committing it', () => {
    const unbalanced = { ...reserveFunds(budget(1000n), 300n, 1), settledMinor: 7n };
    expect(() => settleFunds(unbalanced, reservation(300n), 100n, 2)).toThrowError(InvariantViolation);
  });

  it('says how far an over-settle passes the remainder and what the budget has', () => {
    const b = reserveFunds(budget(300n), 300n, 1);
    expect(() => settleFunds(b, reservation(300n), 301n, 2)).toThrowError("settle of 301 exceeds the reservation's remainder 300 by 1; budget llm has 0 available");
  });
});
