/**
 * Webhook destinations (issue 15): a URL that receives the journal's events of one space,
 * signed with a secret of its own, in journal order, at least once. Times are epoch ms.
 */

export type DestinationState = 'ACTIVE' | 'PAUSED';

export interface Destination {
  id: string;
  spaceId: string;
  url: string;
  /** Event types or `prefix.*` patterns; empty means every type. */
  eventTypes: string[];
  /**
   * The signing secret, sealed by the server (server/src/webhooks/seal.ts): core never sees
   * the secret in clear, and a database dump does not hand it out.
   */
  sealedSecret: string;
  state: DestinationState;
  /** Journal position (eventId) of the last event handled: delivered, or skipped by the filter. */
  cursor: string;
  /** The eventId of the last event delivered, null before the first. */
  lastDeliveredEventId: string | null;
  deliveredCount: number;
  /** Failed attempts since the last success (or resume): the backoff exponent. */
  consecutiveFailures: number;
  failedCount: number;
  /** When the current run of failures began; null while the head event has not failed. */
  failingSince: number | null;
  /** The dispatcher looks at the destination at or after this time. */
  nextAttemptAt: number;
  /** Set while one dispatcher holds it (claimDue); another may take it once this passes. */
  leaseExpiresAt: number | null;
  /** Who holds the lease; a settle that does not present it writes nothing. */
  leaseToken: string | null;
  pausedAt: number | null;
  pausedReason: string | null;
  lastError: string | null;
  createdAt: number;
  updatedAt: number;
}

/** What the dispatcher writes back after an attempt: progress, never settings. */
export type DispatchProgress = Pick<
  Destination,
  | 'state'
  | 'cursor'
  | 'lastDeliveredEventId'
  | 'deliveredCount'
  | 'consecutiveFailures'
  | 'failedCount'
  | 'failingSince'
  | 'nextAttemptAt'
  | 'leaseExpiresAt'
  | 'leaseToken'
  | 'pausedAt'
  | 'pausedReason'
  | 'lastError'
  | 'updatedAt'
>;

export type AttemptStatus = 'SUCCEEDED' | 'FAILED';

/** One HTTP attempt to deliver one event to one destination (docs/design/0014-webhooks.md: GET /deliveries). */
export interface DeliveryAttempt {
  id: string;
  spaceId: string;
  destinationId: string;
  eventId: string;
  /** 1 for the first attempt at this event, counting up across retries. */
  attempt: number;
  status: AttemptStatus;
  httpStatus: number | null;
  error: string | null;
  /** The start of the receiver's reply, truncated (responseBodyMaxBytes). */
  responseBody: string | null;
  durationMs: number;
  attemptedAt: number;
  /** When the next attempt is due after a failure; null after a success. */
  nextAttemptAt: number | null;
}

export interface AttemptFilter {
  destinationId?: string;
  eventId?: string;
  status?: AttemptStatus;
}

/** Position in the attempt audit, most recent first: (attemptedAt, id) descending. */
export interface AttemptPosition {
  attemptedAt: number;
  id: string;
}

export const responseBodyMaxBytes = 1024;
