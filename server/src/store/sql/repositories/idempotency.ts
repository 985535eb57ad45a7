import type { IdempotencyRecord, IdempotencyRepository } from '@baton/core';
import { fromJson, jsonParam, timeParam, toInt, toMs, toText } from '../codec';
import { coalescedWrite, type Coalescible } from '../coalesced-writes';
import type { SqlQueryable } from '../driver';
import { unnestColumns } from './guarded-write';

interface RecordRow {
  space_id: unknown;
  key: unknown;
  fingerprint: unknown;
  status_code: unknown;
  body: unknown;
  created_at: unknown;
}

/**
 * Seed of the advisory-lock hash ("baton-ik"), so idempotency locks do not share a key space
 * with other users of hashtextextended(..., 0).
 */
const lockSeed = '7089075310396533099';

/**
 * A stored reply, held with the transaction's other writes (coalesced-writes.ts): it is the last
 * thing a request writes and nothing reads it back before COMMIT. Replacing is right only because
 * the caller holds tryLock and the old record is past the replay window; the statement itself
 * does not check either. Usually one per transaction; several go as one INSERT from unnest.
 */
const putRecord: Coalescible<IdempotencyRecord> = {
  key: 'idempotency.put',
  statement(records) {
    const replace = `ON CONFLICT (space_id, key) DO UPDATE
      SET fingerprint = EXCLUDED.fingerprint, status_code = EXCLUDED.status_code, body = EXCLUDED.body, created_at = EXCLUDED.created_at`;
    if (records.length === 1) {
      return { dml: `INSERT INTO idempotency_keys (space_id, key, fingerprint, status_code, body, created_at) VALUES ($1, $2, $3, $4, $5::json, $6) ${replace}`, params: recordParams(records[0]!) };
    }
    // Distinct keys: coalesced-writes.ts flushes before a key is held twice.
    return {
      dml: `INSERT INTO idempotency_keys (space_id, key, fingerprint, status_code, body, created_at)
            SELECT space_id, key, fingerprint, status_code, body::json, created_at
            FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::timestamptz[]) AS r(space_id, key, fingerprint, status_code, body, created_at) ${replace}`,
      params: unnestColumns(records.map(recordParams)),
    };
  },
};

const recordParams = (r: IdempotencyRecord) => [r.spaceId, r.key, r.fingerprint, r.statusCode, jsonParam(r.body), timeParam(r.createdAt)];

function toRecord(row: RecordRow): IdempotencyRecord {
  return {
    spaceId: toText(row.space_id),
    key: toText(row.key),
    fingerprint: toText(row.fingerprint),
    statusCode: toInt(row.status_code),
    body: fromJson<unknown>(row.body),
    createdAt: toMs(row.created_at),
  };
}

export function sqlIdempotency(q: SqlQueryable): IdempotencyRepository {
  return {
    async tryLock(spaceId, key) {
      // A transaction-scoped lock on a 64-bit hash of (spaceId, key): released by COMMIT or
      // ROLLBACK, so a crashed request can never leave its key locked. The length prefix keeps
      // ("a:b", "c") and ("a", "b:c") apart; a true 64-bit collision only makes a request
      // wait for an unrelated one, never share its reply.
      const [row] = await q.query<{ locked: boolean }>(
        `SELECT pg_try_advisory_xact_lock(hashtextextended(length($1)::text || ':' || $1 || $2, $3::bigint)) AS locked`,
        [spaceId, key, lockSeed],
      );
      return row?.locked === true;
    },
    async get(spaceId, key) {
      const [row] = await q.query<RecordRow>('SELECT space_id, key, fingerprint, status_code, body, created_at FROM idempotency_keys WHERE space_id = $1 AND key = $2', [
        spaceId,
        key,
      ]);
      return row && toRecord(row);
    },
    async put(r) {
      await coalescedWrite(q, putRecord, r, `idempotency/${r.spaceId}/${r.key}`);
    },
    async purgeUntil(cutoffMs, limit) {
      // The BRIN index on created_at (migration 019) finds the old block ranges without a
      // B-tree write on every idempotent request; SKIP LOCKED leaves rows a request is replacing.
      const rows = await q.query<{ one: unknown }>(
        `DELETE FROM idempotency_keys WHERE (space_id, key) IN (
           SELECT space_id, key FROM idempotency_keys WHERE created_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING 1 AS one`,
        [timeParam(cutoffMs), limit],
      );
      return rows.length;
    },
  };
}
