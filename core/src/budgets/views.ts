import { formatMinor } from '../money';
import type { BudgetView, ReservationView } from '../schemas/budgets';
import { isoFromMs } from '../time';
import type { Budget, BudgetEntry, Reservation } from './model';

export function reservationView(r: Reservation): ReservationView {
  return {
    id: r.id,
    budgetId: r.budgetId,
    scopeId: r.scopeId,
    holder: r.holder,
    amountMinor: formatMinor(r.amountMinor),
    settledMinor: formatMinor(r.settledMinor),
    remainingMinor: formatMinor(r.remainingMinor),
    state: r.state,
    settleBy: r.settleBy === null ? null : isoFromMs(r.settleBy),
    createdAt: isoFromMs(r.createdAt),
    updatedAt: isoFromMs(r.updatedAt),
  };
}

export function budgetView(b: Budget, active: Reservation[]): BudgetView {
  return {
    id: b.id,
    name: b.name,
    currency: b.currency,
    scale: b.scale,
    limitMinor: formatMinor(b.limitMinor),
    reservedMinor: formatMinor(b.reservedMinor),
    settledMinor: formatMinor(b.settledMinor),
    availableMinor: formatMinor(b.availableMinor),
    reservations: active.map(reservationView),
    createdAt: isoFromMs(b.createdAt),
    updatedAt: isoFromMs(b.updatedAt),
  };
}

export function entryView(e: BudgetEntry) {
  return {
    id: e.id,
    kind: e.kind,
    reservationId: e.reservationId,
    amountMinor: formatMinor(e.amountMinor),
    workKey: e.workKey,
    createdAt: isoFromMs(e.createdAt),
  };
}
