import type { AttemptStatus, DeliveryAttempt, DeliveryAttemptRepository, Destination, DestinationRepository, DestinationState } from '@baton/core';
import { timeParam, timeParamOrNull, toInt, toMs, toMsOrNull, toText, toTextArray, toTextOrNull } from '../codec';
import type { SqlParam, SqlQueryable } from '../driver';

interface DestinationRow {
  space_id: unknown;
  id: unknown;
  url: unknown;
  event_types: unknown;
  sealed_secret: unknown;
  state: unknown;
  cursor: unknown;
  last_delivered_event_id: unknown;
  delivered_count: unknown;
  consecutive_failures: unknown;
  failed_count: unknown;
  failing_since: unknown;
  next_attempt_at: unknown;
  lease_expires_at: unknown;
  lease_token: unknown;
  paused_at: unknown;
  paused_reason: unknown;
  last_error: unknown;
  created_at: unknown;
  updated_at: unknown;
}

const columns = `space_id, id, url, event_types, sealed_secret, state, cursor, last_delivered_event_id, delivered_count,
  consecutive_failures, failed_count, failing_since, next_attempt_at, lease_expires_at, lease_token, paused_at, paused_reason,
  last_error, created_at, updated_at`;

function toDestination(row: DestinationRow): Destination {
  return {
    spaceId: toText(row.space_id),
    id: toText(row.id),
    url: toText(row.url),
    eventTypes: toTextArray(row.event_types),
    sealedSecret: toText(row.sealed_secret),
    state: toText(row.state) as DestinationState,
    cursor: toText(row.cursor),
    lastDeliveredEventId: toTextOrNull(row.last_delivered_event_id),
    deliveredCount: toInt(row.delivered_count),
    consecutiveFailures: toInt(row.consecutive_failures),
    failedCount: toInt(row.failed_count),
    failingSince: toMsOrNull(row.failing_since),
    nextAttemptAt: toMs(row.next_attempt_at),
    leaseExpiresAt: toMsOrNull(row.lease_expires_at),
    leaseToken: toTextOrNull(row.lease_token),
    pausedAt: toMsOrNull(row.paused_at),
    pausedReason: toTextOrNull(row.paused_reason),
    lastError: toTextOrNull(row.last_error),
    createdAt: toMs(row.created_at),
    updatedAt: toMs(row.updated_at),
  };
}

/**
 * Destinations. The claim is one UPDATE over a SKIP LOCKED subselect: dispatchers on several
 * servers each take due rows nobody else is taking, and the lease (lease_expires_at, lease_token)
 * keeps them theirs after the claim commits. settle writes only while the token still holds.
 */
export function sqlDestinations(q: SqlQueryable): DestinationRepository {
  return {
    async insert(d) {
      const params: SqlParam[] = [
        d.spaceId, d.id, d.url, d.eventTypes, d.sealedSecret, d.state, d.cursor, d.lastDeliveredEventId, d.deliveredCount,
        d.consecutiveFailures, d.failedCount, timeParamOrNull(d.failingSince), timeParam(d.nextAttemptAt), timeParamOrNull(d.leaseExpiresAt),
        d.leaseToken, timeParamOrNull(d.pausedAt), d.pausedReason, d.lastError, timeParam(d.createdAt), timeParam(d.updatedAt),
      ];
      await q.query(
        `INSERT INTO webhook_destinations (${columns})
         VALUES ($1, $2, $3, $4::text[], $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`,
        params,
      );
    },
    async get(spaceId, id) {
      const [row] = await q.query<DestinationRow>(`SELECT ${columns} FROM webhook_destinations WHERE space_id = $1 AND id = $2`, [spaceId, id]);
      return row && toDestination(row);
    },
    async list(spaceId, after, limit) {
      const rows =
        after === null
          ? await q.query<DestinationRow>(`SELECT ${columns} FROM webhook_destinations WHERE space_id = $1 ORDER BY created_at, id LIMIT $2`, [spaceId, limit])
          : await q.query<DestinationRow>(
              `SELECT ${columns} FROM webhook_destinations WHERE space_id = $1 AND (created_at, id) > ($2, $3) ORDER BY created_at, id LIMIT $4`,
              [spaceId, timeParam(after.createdAt), after.id, limit],
            );
      return rows.map(toDestination);
    },
    async delete(spaceId, id) {
      const rows = await q.query(`DELETE FROM webhook_destinations WHERE space_id = $1 AND id = $2 RETURNING id`, [spaceId, id]);
      return rows.length === 1;
    },
    async claimDue(nowMs, leaseToken, leaseExpiresAt, limit) {
      const rows = await q.query<DestinationRow>(
        `UPDATE webhook_destinations d SET lease_token = $2, lease_expires_at = $3
         FROM (SELECT space_id, id FROM webhook_destinations
               WHERE state = 'ACTIVE' AND next_attempt_at <= $1 AND (lease_expires_at IS NULL OR lease_expires_at <= $1)
               ORDER BY next_attempt_at LIMIT $4 FOR UPDATE SKIP LOCKED) due
         WHERE d.space_id = due.space_id AND d.id = due.id
         RETURNING ${columns.split(',').map((c) => `d.${c.trim()}`).join(', ')}`,
        [timeParam(nowMs), leaseToken, timeParam(leaseExpiresAt), limit],
      );
      return rows.map(toDestination);
    },
    async settle(spaceId, id, leaseToken, p) {
      const rows = await q.query(
        `UPDATE webhook_destinations SET state = $4, cursor = $5, last_delivered_event_id = $6, delivered_count = $7,
           consecutive_failures = $8, failed_count = $9, failing_since = $10, next_attempt_at = $11, lease_expires_at = $12,
           lease_token = $13, paused_at = $14, paused_reason = $15, last_error = $16, updated_at = $17
         WHERE space_id = $1 AND id = $2 AND lease_token = $3 RETURNING id`,
        [
          spaceId, id, leaseToken, p.state, p.cursor, p.lastDeliveredEventId, p.deliveredCount, p.consecutiveFailures, p.failedCount,
          timeParamOrNull(p.failingSince), timeParam(p.nextAttemptAt), timeParamOrNull(p.leaseExpiresAt), p.leaseToken,
          timeParamOrNull(p.pausedAt), p.pausedReason, p.lastError, timeParam(p.updatedAt),
        ],
      );
      return rows.length === 1;
    },
    async resume(spaceId, id, nowMs) {
      const [row] = await q.query<DestinationRow>(
        `UPDATE webhook_destinations SET state = 'ACTIVE', consecutive_failures = 0, failing_since = NULL, paused_at = NULL,
           paused_reason = NULL, next_attempt_at = $3, updated_at = $3
         WHERE space_id = $1 AND id = $2 AND state = 'PAUSED' RETURNING ${columns}`,
        [spaceId, id, timeParam(nowMs)],
      );
      return row && toDestination(row);
    },
  };
}

interface AttemptRow {
  space_id: unknown;
  id: unknown;
  destination_id: unknown;
  event_id: unknown;
  attempt: unknown;
  status: unknown;
  http_status: unknown;
  error: unknown;
  response_body: unknown;
  duration_ms: unknown;
  attempted_at: unknown;
  next_attempt_at: unknown;
}

const attemptColumns = 'space_id, id, destination_id, event_id, attempt, status, http_status, error, response_body, duration_ms, attempted_at, next_attempt_at';

function toAttempt(row: AttemptRow): DeliveryAttempt {
  return {
    spaceId: toText(row.space_id),
    id: toText(row.id),
    destinationId: toText(row.destination_id),
    eventId: toText(row.event_id),
    attempt: toInt(row.attempt),
    status: toText(row.status) as AttemptStatus,
    httpStatus: row.http_status === null || row.http_status === undefined ? null : toInt(row.http_status),
    error: toTextOrNull(row.error),
    responseBody: toTextOrNull(row.response_body),
    durationMs: toInt(row.duration_ms),
    attemptedAt: toMs(row.attempted_at),
    nextAttemptAt: toMsOrNull(row.next_attempt_at),
  };
}

/** The audit: appended by dispatchers, read most recent first with optional filters. */
export function sqlDeliveryAttempts(q: SqlQueryable): DeliveryAttemptRepository {
  return {
    async insert(a) {
      await q.query(
        `INSERT INTO webhook_delivery_attempts (${attemptColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
        [a.spaceId, a.id, a.destinationId, a.eventId, a.attempt, a.status, a.httpStatus, a.error, a.responseBody, a.durationMs, timeParam(a.attemptedAt), timeParamOrNull(a.nextAttemptAt)],
      );
    },
    async list(spaceId, filter, before, limit) {
      const params: SqlParam[] = [spaceId];
      const where = ['space_id = $1'];
      const add = (clause: (n: number) => string, ...values: SqlParam[]): void => {
        where.push(clause(params.length + 1));
        params.push(...values);
      };
      if (filter.destinationId !== undefined) add((n) => `destination_id = $${n}`, filter.destinationId);
      if (filter.eventId !== undefined) add((n) => `event_id = $${n}`, filter.eventId);
      if (filter.status !== undefined) add((n) => `status = $${n}`, filter.status);
      if (before !== null) add((n) => `(attempted_at, id) < ($${n}, $${n + 1})`, timeParam(before.attemptedAt), before.id);
      params.push(limit);
      const rows = await q.query<AttemptRow>(
        `SELECT ${attemptColumns} FROM webhook_delivery_attempts WHERE ${where.join(' AND ')} ORDER BY attempted_at DESC, id DESC LIMIT $${params.length}`,
        params,
      );
      return rows.map(toAttempt);
    },
    async purgeUntil(cutoffMs, limit) {
      // The BRIN index on attempted_at (migration 020) finds the old block ranges across spaces.
      const rows = await q.query<{ one: unknown }>(
        `DELETE FROM webhook_delivery_attempts WHERE (space_id, id) IN (
           SELECT space_id, id FROM webhook_delivery_attempts WHERE attempted_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING 1 AS one`,
        [timeParam(cutoffMs), limit],
      );
      return rows.length;
    },
  };
}
