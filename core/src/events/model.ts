/** An event as appended by an operation; the journal assigns eventId and occurredAt. */
export interface NewEvent {
  type: string;
  aggregateType: string;
  aggregateId: string;
  scopeId: string | null;
  data: Record<string, unknown>;
  /**
   * Not stored: a topic on which this event wakes one long poll (notifier.ts readyTopicOf: a
   * delivery became READY). NotifyingStore takes it off before the event is appended.
   */
  wakesOne?: string;
}

export interface JournalEvent extends Omit<NewEvent, 'wakesOne'> {
  /** Position in the journal: a decimal string, increasing in commit-visible order. */
  eventId: string;
  spaceId: string;
  occurredAt: number;
}

/**
 * Every event type Baton emits, `aggregate.verb` in snake case (docs/design/0013-events-and-watch.md). docs/events.md
 * describes each; a test keeps the two in step.
 */
export const eventTypes = {
  budgetCreated: 'budget.created',
  budgetReserved: 'budget.reserved',
  budgetSettled: 'budget.settled',
  budgetVoided: 'budget.voided',
  budgetReservationOverdue: 'budget.reservation_overdue',
  barrierCreated: 'barrier.created',
  barrierArrived: 'barrier.arrived',
  barrierReleased: 'barrier.released',
  barrierEpochAdvanced: 'barrier.epoch_advanced',
  barrierCancelled: 'barrier.cancelled',
  claimAcquired: 'claim.acquired',
  claimRenewed: 'claim.renewed',
  claimReleased: 'claim.released',
  claimExpired: 'claim.expired',
  timerArmed: 'timer.armed',
  timerFired: 'timer.fired',
  timerCancelled: 'timer.cancelled',
  poolCreated: 'pool.created',
  poolUnitsClaimed: 'pool.units_claimed',
  poolUnitsReleased: 'pool.units_released',
  workLimitCreated: 'work_limit.created',
  workLimitSlotClaimed: 'work_limit.slot_claimed',
  workLimitSlotReleased: 'work_limit.slot_released',
  allowanceCreated: 'allowance.created',
  allowanceConsumed: 'allowance.consumed',
  allowanceWaiterQueued: 'allowance.waiter_queued',
  allowanceWaiterGranted: 'allowance.waiter_granted',
  allowanceWaiterExpired: 'allowance.waiter_expired',
  allowanceWaiterCancelled: 'allowance.waiter_cancelled',
  allowanceCooldownStarted: 'allowance.cooldown_started',
  spaceLimitsUpdated: 'space.limits_updated',
  mailboxCreated: 'mailbox.created',
  messageSent: 'message.sent',
  messageClaimed: 'message.claimed',
  messageLeaseRenewed: 'message.lease_renewed',
  messageAcked: 'message.acked',
  messageNacked: 'message.nacked',
  messageLeaseExpired: 'message.lease_expired',
  messageDead: 'message.dead',
  messageCancelled: 'message.cancelled',
  taskSubmitted: 'task.submitted',
  taskJoined: 'task.joined',
  taskDetached: 'task.detached',
  taskRunning: 'task.running',
  taskRequeued: 'task.requeued',
  taskSucceeded: 'task.succeeded',
  taskFailed: 'task.failed',
  taskCancelled: 'task.cancelled',
  taskExpired: 'task.expired',
  runCreated: 'run.created',
  runCompleted: 'run.completed',
  runCancelled: 'run.cancelled',
  groupCreated: 'group.created',
  groupMemberAdded: 'group.member_added',
  groupVerdict: 'group.verdict',
  groupSealed: 'group.sealed',
  groupDecided: 'group.decided',
} as const;
