import type { AttemptFilter, AttemptPosition, DeliveryAttempt, Destination, DispatchProgress } from './model';

/**
 * Webhook destinations. Dispatchers claim due destinations with a lease (one statement, SKIP
 * LOCKED on SQL) and write their progress back only while they hold it, so two servers do not
 * send the same event in the normal case; an expired lease lets another take over.
 */
export interface DestinationRepository {
  insert(row: Destination): Promise<void>;
  get(spaceId: string, id: string): Promise<Destination | undefined>;
  /** Ordered by (createdAt, id); `after` is exclusive. */
  list(spaceId: string, after: { createdAt: number; id: string } | null, limit: number): Promise<Destination[]>;
  /** False when there was no such destination. */
  delete(spaceId: string, id: string): Promise<boolean>;
  /**
   * Leases up to `limit` ACTIVE destinations due at nowMs whose lease is free or expired, to
   * `leaseToken` until leaseExpiresAt, across every space: the rows as leased.
   */
  claimDue(nowMs: number, leaseToken: string, leaseExpiresAt: number, limit: number): Promise<Destination[]>;
  /** Writes progress while `leaseToken` still holds the lease: false (nothing written) otherwise. */
  settle(spaceId: string, id: string, leaseToken: string, progress: DispatchProgress): Promise<boolean>;
  /** PAUSED to ACTIVE, due now, failures forgotten: the row, or undefined when it was not PAUSED (or is unknown). */
  resume(spaceId: string, id: string, nowMs: number): Promise<Destination | undefined>;
}

export interface DeliveryAttemptRepository {
  insert(row: DeliveryAttempt): Promise<void>;
  /** Most recent first, (attemptedAt, id) descending; `before` is exclusive. */
  list(spaceId: string, filter: AttemptFilter, before: AttemptPosition | null, limit: number): Promise<DeliveryAttempt[]>;
  /**
   * Retention (docs/design/0017-retention.md, 365 days): deletes up to `limit` attempts of any space made at or
   * before `cutoffMs` and says how many. Rows another transaction holds are skipped (SKIP LOCKED).
   */
  purgeUntil(cutoffMs: number, limit: number): Promise<number>;
}
