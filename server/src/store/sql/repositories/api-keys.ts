import { assert, type ApiKey, type ApiKeyRepository, type Permission } from '@baton/core';
import { timeParam, timeParamOrNull, toInt, toMs, toMsOrNull, toText, toTextArray } from '../codec';
import type { SqlQueryable } from '../driver';

interface ApiKeyRow {
  id: unknown;
  org_id: unknown;
  name: unknown;
  secret_hash: unknown;
  permissions: unknown;
  space_ids: unknown;
  created_at: unknown;
  revoked_at: unknown;
}

const columns = 'id, org_id, name, secret_hash, permissions, space_ids, created_at, revoked_at';

function toApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: toText(row.id),
    orgId: toText(row.org_id),
    name: toText(row.name),
    secretHash: toText(row.secret_hash),
    permissions: toTextArray(row.permissions) as Permission[],
    spaceIds: row.space_ids === null ? null : toTextArray(row.space_ids),
    createdAt: toMs(row.created_at),
    revokedAt: toMsOrNull(row.revoked_at),
  };
}

export function sqlApiKeys(q: SqlQueryable): ApiKeyRepository {
  return {
    async insert(key) {
      await q.query(`INSERT INTO api_keys (${columns}) VALUES ($1, $2, $3, $4, $5::text[], $6::text[], $7, $8)`, [
        key.id,
        key.orgId,
        key.name,
        key.secretHash,
        key.permissions,
        key.spaceIds,
        timeParam(key.createdAt),
        timeParamOrNull(key.revokedAt),
      ]);
    },
    async get(id) {
      const [row] = await q.query<ApiKeyRow>(`SELECT ${columns} FROM api_keys WHERE id = $1`, [id]);
      return row && toApiKey(row);
    },
    async update(key) {
      const rows = await q.query(
        `UPDATE api_keys SET org_id = $2, name = $3, secret_hash = $4, permissions = $5::text[], space_ids = $6::text[], created_at = $7, revoked_at = $8
         WHERE id = $1 RETURNING id`,
        [key.id, key.orgId, key.name, key.secretHash, key.permissions, key.spaceIds, timeParam(key.createdAt), timeParamOrNull(key.revokedAt)],
      );
      assert(rows.length === 1, `update of missing api key ${key.id}`);
    },
    async countActiveByOrg(orgId) {
      const [row] = await q.query<{ n: unknown }>('SELECT count(*) AS n FROM api_keys WHERE org_id = $1 AND revoked_at IS NULL', [orgId]);
      return toInt(row?.n);
    },
  };
}
