import { eventTypes, type NewEvent } from '../events/model';
import { formatMinor } from '../money';
import type { Random } from '../random';
import { isoFromMs } from '../time';
import type { Reservation } from './model';
import { assertReservation } from './rules';

/**
 * A reservation is made two ways: by POST /budgets/{id}/reserve, and by an admission whose task
 * requires a budget (admission/claims.ts), where it rides on the delivery and has no settleBy.
 * Both build it here and announce it with reservedEvent, so the two cannot drift apart.
 */

/** What the maker of a reservation chooses; the rest a new reservation always starts with. */
export interface ReservationTerms {
  spaceId: string;
  budgetId: string;
  scopeId: string;
  holder: string;
  amountMinor: bigint;
  settleBy: number | null;
}

/** A new ACTIVE reservation, nothing of it settled yet. The caller has taken the funds from the budget (reserveFunds). */
export function newReservation(random: Random, nowMs: number, terms: ReservationTerms): Reservation {
  const reservation: Reservation = {
    id: random.uuid(),
    ...terms,
    settledMinor: 0n,
    remainingMinor: terms.amountMinor,
    state: 'ACTIVE',
    overdueAt: null,
    createdAt: nowMs,
    updatedAt: nowMs,
  };
  assertReservation(reservation);
  return reservation;
}

/** budget.reserved for a new reservation; `about` adds what its maker knows (an admission: the delivery and its task). */
export const reservedEvent = (r: Reservation, about: Record<string, unknown> = {}): NewEvent => ({
  type: eventTypes.budgetReserved,
  aggregateType: 'budget',
  aggregateId: r.budgetId,
  scopeId: r.scopeId,
  data: { ...about, reservationId: r.id, holder: r.holder, amountMinor: formatMinor(r.amountMinor), settleBy: r.settleBy === null ? null : isoFromMs(r.settleBy) },
});
