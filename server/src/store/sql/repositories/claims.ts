import { type Claim, type ClaimKeyRow, type ClaimRepository, type ClaimState } from '@baton/core';
import { lockClause } from './lock-clause';
import { timeParam, timeParamOrNull, toInt, toMs, toMsOrNull, toText } from '../codec';
import type { SqlParam, SqlQueryable } from '../driver';
import { writeOne } from './guarded-write';

interface ClaimRow {
  space_id: unknown;
  id: unknown;
  claim_key: unknown;
  scope_id: unknown;
  holder: unknown;
  holder_session_hash: unknown;
  token_hash: unknown;
  token_nonce: unknown;
  fencing_token: unknown;
  state: unknown;
  lease_expires_at: unknown;
  ended_at: unknown;
  created_at: unknown;
  updated_at: unknown;
}

interface KeyRow {
  space_id: unknown;
  claim_key: unknown;
  last_fencing_token: unknown;
  created_at: unknown;
  updated_at: unknown;
}

const columns = 'space_id, id, claim_key, scope_id, holder, holder_session_hash, token_hash, fencing_token, state, lease_expires_at, ended_at, created_at, updated_at, token_nonce';
const keyColumns = 'space_id, claim_key, last_fencing_token, created_at, updated_at';

/** fencing_token is bigint; toInt refuses anything past 2^53 - 1, so the JSON number stays exact. */
function toClaim(row: ClaimRow): Claim {
  return {
    spaceId: toText(row.space_id),
    id: toText(row.id),
    claimKey: toText(row.claim_key),
    scopeId: toText(row.scope_id),
    holder: toText(row.holder),
    holderSessionHash: toText(row.holder_session_hash),
    tokenHash: toText(row.token_hash),
    tokenNonce: toText(row.token_nonce),
    fencingToken: toInt(row.fencing_token),
    state: toText(row.state) as ClaimState,
    leaseExpiresAt: toMs(row.lease_expires_at),
    endedAt: toMsOrNull(row.ended_at),
    createdAt: toMs(row.created_at),
    updatedAt: toMs(row.updated_at),
  };
}

function toKey(row: KeyRow): ClaimKeyRow {
  return {
    spaceId: toText(row.space_id),
    claimKey: toText(row.claim_key),
    lastFencingToken: toInt(row.last_fencing_token),
    createdAt: toMs(row.created_at),
    updatedAt: toMs(row.updated_at),
  };
}

/** Parameters $1..$13 in `columns` order. */
function params(c: Claim): SqlParam[] {
  return [
    c.spaceId, c.id, c.claimKey, c.scopeId, c.holder, c.holderSessionHash, c.tokenHash, c.fencingToken, c.state,
    timeParam(c.leaseExpiresAt), timeParamOrNull(c.endedAt), timeParam(c.createdAt), timeParam(c.updatedAt), c.tokenNonce,
  ];
}

export function sqlClaims(q: SqlQueryable): ClaimRepository {
  return {
    async lockKey(spaceId, claimKey, nowMs) {
      // The upsert is the lock: on a new key the insert holds the new row (a concurrent insert of
      // the same key waits on the primary key until this transaction ends, then takes the
      // DO UPDATE path); on a known key DO UPDATE locks the row, waiting for a transaction that
      // holds it, and RETURNING answers its latest committed version. The assignment changes no
      // value and exists for the lock (PostgreSQL still writes a row version, a HOT update: no
      // indexed column changes; a refused acquire rolls it back). Either way no two acquires of a
      // key ever read the same lastFencingToken.
      const [row] = await q.query<KeyRow>(
        `INSERT INTO claim_keys (${keyColumns}) VALUES ($1, $2, 0, $3, $3)
         ON CONFLICT (space_id, claim_key) DO UPDATE SET last_fencing_token = claim_keys.last_fencing_token
         RETURNING ${keyColumns}`,
        [spaceId, claimKey, timeParam(nowMs)],
      );
      return toKey(row!);
    },
    async advanceKey(key) {
      // Guarded: the stored token must be below the new one, or the statement fails (BT000).
      await writeOne(
        q,
        `UPDATE claim_keys SET last_fencing_token = $3, updated_at = $4 WHERE space_id = $1 AND claim_key = $2 AND last_fencing_token < $3 RETURNING 1`,
        [key.spaceId, key.claimKey, key.lastFencingToken, timeParam(key.updatedAt)],
        `claim key ${key.claimKey}: fencing token ${key.lastFencingToken} does not grow`,
      );
    },
    async getHeld(spaceId, claimKey, options) {
      const [row] = await q.query<ClaimRow>(`SELECT ${columns} FROM claims WHERE space_id = $1 AND claim_key = $2 AND state = 'HELD'${lockClause(options)}`, [spaceId, claimKey]);
      return row && toClaim(row);
    },
    async insert(claim) {
      await q.write(`INSERT INTO claims (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`, params(claim));
    },
    async get(spaceId, id, options) {
      const [row] = await q.query<ClaimRow>(`SELECT ${columns} FROM claims WHERE space_id = $1 AND id = $2${lockClause(options)}`, [spaceId, id]);
      return row && toClaim(row);
    },
    async update(claim) {
      // The key, fencing token and token nonce of a claim never change: they are in the WHERE, not the SET.
      await writeOne(
        q,
        `UPDATE claims SET scope_id = $4, holder = $5, holder_session_hash = $6, token_hash = $7, state = $9, lease_expires_at = $10, ended_at = $11, created_at = $12, updated_at = $13
         WHERE space_id = $1 AND id = $2 AND claim_key = $3 AND fencing_token = $8 AND token_nonce = $14 RETURNING 1`,
        params(claim),
        `update of missing claim ${claim.id}`,
      );
    },
    async list(spaceId, filter, after, limit) {
      // Each filter is a parameter either way (NULL: no filter); the position is a row comparison,
      // so each page is one range scan of claims_by_created.
      const states = filter.states === null ? null : [...filter.states];
      const rows = await q.query<ClaimRow>(
        `SELECT ${columns} FROM claims
         WHERE space_id = $1 AND ($2::text IS NULL OR claim_key = $2) AND ($3::text IS NULL OR scope_id = $3) AND ($4::text[] IS NULL OR state = ANY($4::text[]))
           AND ($5::timestamptz IS NULL OR (created_at, id) > ($5::timestamptz, $6))
         ORDER BY created_at, id LIMIT $7`,
        [spaceId, filter.claimKey, filter.scopeId, states, after === null ? null : timeParam(after.createdAt), after?.id ?? null, limit],
      );
      return rows.map(toClaim);
    },
    async claimExpired(nowMs, limit) {
      const rows = await q.query<ClaimRow>(
        `SELECT ${columns} FROM claims WHERE state = 'HELD' AND lease_expires_at <= $1 ORDER BY lease_expires_at, space_id, id LIMIT $2 FOR UPDATE SKIP LOCKED`,
        [timeParam(nowMs), limit],
      );
      return rows.map(toClaim);
    },
    async countLive(spaceIds, nowMs) {
      const rows = await q.query<{ space_id: unknown; n: unknown }>(
        `SELECT space_id, count(*) AS n FROM claims WHERE space_id = ANY($1::text[]) AND state = 'HELD' AND lease_expires_at > $2 GROUP BY space_id`,
        [[...spaceIds], timeParam(nowMs)],
      );
      return new Map(rows.map((r) => [toText(r.space_id), toInt(r.n)]));
    },
    async purgeEnded(cutoffs, limit) {
      if (cutoffs.length === 0) return 0;
      // As messages' purgeFinished: per space one range of claims_ended (migration 026), no ORDER BY.
      const rows = await q.query(
        `DELETE FROM claims c USING (
           SELECT d.space_id, d.id FROM unnest($1::text[], $2::timestamptz[]) AS x(space_id, cutoff)
           CROSS JOIN LATERAL (
             SELECT space_id, id FROM claims
             WHERE space_id = x.space_id AND state <> 'HELD' AND ended_at <= x.cutoff
             LIMIT $3 FOR UPDATE SKIP LOCKED) d
           LIMIT $3) due
         WHERE c.space_id = due.space_id AND c.id = due.id
         RETURNING 1`,
        [cutoffs.map((c) => c.spaceId), cutoffs.map((c) => timeParam(c.cutoffMs)), limit],
      );
      return rows.length;
    },
  };
}
