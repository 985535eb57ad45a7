/** Budget state as stored. Amounts are bigint minor units; times are epoch ms. */
export interface Budget {
  id: string;
  spaceId: string;
  name: string;
  currency: string;
  scale: number;
  limitMinor: bigint;
  availableMinor: bigint;
  reservedMinor: bigint;
  settledMinor: bigint;
  createdAt: number;
  updatedAt: number;
}

export const reservationStates = ['ACTIVE', 'SETTLED', 'VOIDED'] as const;
export type ReservationState = (typeof reservationStates)[number];

export interface Reservation {
  id: string;
  spaceId: string;
  budgetId: string;
  scopeId: string;
  holder: string;
  amountMinor: bigint;
  settledMinor: bigint;
  remainingMinor: bigint;
  state: ReservationState;
  settleBy: number | null;
  /** When budget.reservation_overdue was emitted; null until then (it is emitted once). */
  overdueAt: number | null;
  createdAt: number;
  updatedAt: number;
}

export type EntryKind = 'SETTLE' | 'VOID';

/** One settle or void, deduplicated by workKey within its budget. */
export interface BudgetEntry {
  id: string;
  spaceId: string;
  budgetId: string;
  reservationId: string;
  kind: EntryKind;
  amountMinor: bigint;
  workKey: string;
  createdAt: number;
}
