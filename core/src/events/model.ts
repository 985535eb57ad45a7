/** An event as appended by an operation; the journal assigns eventId and occurredAt. */
export interface NewEvent {
  type: string;
  aggregateType: string;
  aggregateId: string;
  scopeId: string | null;
  data: Record<string, unknown>;
}

export interface JournalEvent extends NewEvent {
  /** Position in the journal: a decimal string, increasing in commit-visible order. */
  eventId: string;
  spaceId: string;
  occurredAt: number;
}

/**
 * Every event type Baton emits, `aggregate.verb` in snake case (decisions §7). docs/events.md
 * describes each; a test keeps the two in step.
 */
export const eventTypes = {
  budgetCreated: 'budget.created',
  budgetReserved: 'budget.reserved',
  budgetSettled: 'budget.settled',
  budgetVoided: 'budget.voided',
  budgetReservationOverdue: 'budget.reservation_overdue',
} as const;
