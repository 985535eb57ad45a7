import { assert } from '../assert';
import { BatonError, conflict } from '../errors';
import { maxMinor } from '../money';
import type { Budget, Reservation } from './model';

/**
 * Budget arithmetic as pure functions over stored state. Each returns new values and checks
 * conservation: a broken balance is a bug in Baton, so it fails loudly instead of committing.
 */
export function assertConservation(b: Budget): void {
  assert(b.availableMinor >= 0n, `budget ${b.id}: available ${b.availableMinor} is negative`);
  assert(b.reservedMinor >= 0n, `budget ${b.id}: reserved ${b.reservedMinor} is negative`);
  assert(b.settledMinor >= 0n, `budget ${b.id}: settled ${b.settledMinor} is negative`);
  assert(b.limitMinor <= maxMinor, `budget ${b.id}: limit ${b.limitMinor} exceeds 18 digits`);
  assert(
    b.limitMinor === b.availableMinor + b.reservedMinor + b.settledMinor,
    `budget ${b.id}: limit ${b.limitMinor} != available ${b.availableMinor} + reserved ${b.reservedMinor} + settled ${b.settledMinor}`,
  );
}

export function assertReservation(r: Reservation): void {
  assert(r.remainingMinor >= 0n && r.settledMinor >= 0n, `reservation ${r.id}: negative amount`);
  assert(r.state === 'ACTIVE' || r.remainingMinor === 0n, `reservation ${r.id}: ${r.state} with remainder ${r.remainingMinor}`);
  // Over-settle takes the excess from available, so settled may pass amount, but then nothing remains.
  assert(r.settledMinor + r.remainingMinor >= r.amountMinor || r.state === 'VOIDED', `reservation ${r.id}: lost funds`);
}

export function reserveFunds(b: Budget, amountMinor: bigint, nowMs: number): Budget {
  assert(amountMinor > 0n, 'reserve amount must be positive');
  if (amountMinor > b.availableMinor) {
    throw new BatonError('INSUFFICIENT_BUDGET', `budget ${b.name} has ${b.availableMinor} available, ${amountMinor} requested`);
  }
  const next = { ...b, availableMinor: b.availableMinor - amountMinor, reservedMinor: b.reservedMinor + amountMinor, updatedAt: nowMs };
  assertConservation(next);
  return next;
}

export function requireActive(r: Reservation): void {
  if (r.state !== 'ACTIVE') throw conflict(`reservation ${r.id} is ${r.state}`);
}

/**
 * Settles `amountMinor` against an ACTIVE reservation. Up to the remainder it moves reserved
 * to settled; beyond it the excess comes from available (INSUFFICIENT_BUDGET if it cannot).
 */
export function settleFunds(b: Budget, r: Reservation, amountMinor: bigint, nowMs: number): { budget: Budget; reservation: Reservation } {
  requireActive(r);
  assert(amountMinor > 0n, 'settle amount must be positive');
  const fromReserved = amountMinor < r.remainingMinor ? amountMinor : r.remainingMinor;
  const excess = amountMinor - fromReserved;
  if (excess > b.availableMinor) {
    throw new BatonError(
      'INSUFFICIENT_BUDGET',
      `settle of ${amountMinor} exceeds the reservation's remainder ${r.remainingMinor} by ${excess}; budget ${b.name} has ${b.availableMinor} available`,
    );
  }
  const budget: Budget = {
    ...b,
    reservedMinor: b.reservedMinor - fromReserved,
    availableMinor: b.availableMinor - excess,
    settledMinor: b.settledMinor + amountMinor,
    updatedAt: nowMs,
  };
  const remainingMinor = r.remainingMinor - fromReserved;
  const reservation: Reservation = {
    ...r,
    settledMinor: r.settledMinor + amountMinor,
    remainingMinor,
    state: remainingMinor === 0n ? 'SETTLED' : 'ACTIVE',
    updatedAt: nowMs,
  };
  assertConservation(budget);
  assertReservation(reservation);
  return { budget, reservation };
}

/** Releases the unspent remainder of an ACTIVE reservation back to available. */
export function voidRemainder(b: Budget, r: Reservation, nowMs: number): { budget: Budget; reservation: Reservation; releasedMinor: bigint } {
  requireActive(r);
  const releasedMinor = r.remainingMinor;
  const budget: Budget = {
    ...b,
    reservedMinor: b.reservedMinor - releasedMinor,
    availableMinor: b.availableMinor + releasedMinor,
    updatedAt: nowMs,
  };
  const reservation: Reservation = { ...r, remainingMinor: 0n, state: 'VOIDED', updatedAt: nowMs };
  assertConservation(budget);
  assertReservation(reservation);
  return { budget, reservation, releasedMinor };
}
