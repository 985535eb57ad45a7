import type { DeliveryAttemptView, DestinationView } from '../schemas/destinations';
import { isoFromMs } from '../time';
import type { DeliveryAttempt, Destination } from './model';

const isoOrNull = (ms: number | null): string | null => (ms === null ? null : isoFromMs(ms));

/** Never the secret, sealed or not. */
export function destinationView(d: Destination): DestinationView {
  return {
    id: d.id,
    url: d.url,
    eventTypes: [...d.eventTypes],
    state: d.state,
    cursor: d.cursor,
    lastDeliveredEventId: d.lastDeliveredEventId,
    deliveredCount: d.deliveredCount,
    failedCount: d.failedCount,
    consecutiveFailures: d.consecutiveFailures,
    failingSince: isoOrNull(d.failingSince),
    nextAttemptAt: isoFromMs(d.nextAttemptAt),
    pausedAt: isoOrNull(d.pausedAt),
    pausedReason: d.pausedReason,
    lastError: d.lastError,
    createdAt: isoFromMs(d.createdAt),
    updatedAt: isoFromMs(d.updatedAt),
  };
}

export function deliveryAttemptView(a: DeliveryAttempt): DeliveryAttemptView {
  return {
    id: a.id,
    destinationId: a.destinationId,
    eventId: a.eventId,
    attempt: a.attempt,
    status: a.status,
    httpStatus: a.httpStatus,
    error: a.error,
    responseBody: a.responseBody,
    durationMs: a.durationMs,
    attemptedAt: isoFromMs(a.attemptedAt),
    nextAttemptAt: isoOrNull(a.nextAttemptAt),
  };
}
