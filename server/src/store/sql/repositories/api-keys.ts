import { type ApiKey, type ApiKeyRepository, type Permission } from '@baton/core';
import { timeParam, timeParamOrNull, toInt, toMs, toMsOrNull, toText, toTextArray } from '../codec';
import type { SqlQueryable } from '../driver';
import { writeOne } from './guarded-write';
import { columns as orgColumns, toOrg, type OrgRow } from './orgs';
import { columns as spaceColumns, toSpace, type SpaceRow } from './spaces';

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

const prefixed = (alias: string, list: string): string => list.split(', ').map((c) => `${alias}.${c} AS ${alias}_${c}`).join(', ');
const unprefixed = (row: Record<string, unknown>, alias: string): Record<string, unknown> =>
  Object.fromEntries(Object.entries(row).filter(([k]) => k.startsWith(`${alias}_`)).map(([k, v]) => [k.slice(alias.length + 1), v]));

export function sqlApiKeys(q: SqlQueryable): ApiKeyRepository {
  return {
    async getWithTenant(keyId, spaceId) {
      // One statement instead of three: the key, its org and the named space, outer-joined so a
      // missing org or space still answers the key (auth tells those cases apart).
      const [row] = await q.query<Record<string, unknown>>(
        `SELECT ${prefixed('k', columns)}, ${prefixed('o', orgColumns)}, ${prefixed('s', spaceColumns)}
         FROM api_keys k LEFT JOIN orgs o ON o.id = k.org_id LEFT JOIN spaces s ON s.space_id = $2
         WHERE k.id = $1`,
        [keyId, spaceId],
      );
      if (!row) return undefined;
      const org = unprefixed(row, 'o');
      const space = unprefixed(row, 's');
      return {
        key: toApiKey(unprefixed(row, 'k') as unknown as ApiKeyRow),
        org: org.id === null ? undefined : toOrg(org as unknown as OrgRow),
        space: space.space_id === null ? undefined : toSpace(space as unknown as SpaceRow),
      };
    },
    async insert(key) {
      await q.write(`INSERT INTO api_keys (${columns}) VALUES ($1, $2, $3, $4, $5::text[], $6::text[], $7, $8)`, [
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
      await writeOne(q, `UPDATE api_keys SET org_id = $2, name = $3, secret_hash = $4, permissions = $5::text[], space_ids = $6::text[], created_at = $7, revoked_at = $8
         WHERE id = $1 RETURNING 1`, [key.id, key.orgId, key.name, key.secretHash, key.permissions, key.spaceIds, timeParam(key.createdAt), timeParamOrNull(key.revokedAt)], `update of missing api key ${key.id}`);
    },
    async countActiveByOrg(orgId) {
      const [row] = await q.query<{ n: unknown }>('SELECT count(*) AS n FROM api_keys WHERE org_id = $1 AND revoked_at IS NULL', [orgId]);
      return toInt(row?.n);
    },
    async listByOrg(orgId, spaceId, after, limit) {
      const rows = await q.query<ApiKeyRow>(
        `SELECT ${columns} FROM api_keys
         WHERE org_id = $1 AND ($2::text IS NULL OR space_ids IS NULL OR $2::text = ANY(space_ids))
           AND ($3::timestamptz IS NULL OR (created_at, id) > ($3::timestamptz, $4))
         ORDER BY created_at, id LIMIT $5`,
        [orgId, spaceId, after === null ? null : timeParam(after.createdAt), after?.id ?? null, limit],
      );
      return rows.map(toApiKey);
    },
  };
}
