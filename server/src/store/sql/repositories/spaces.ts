import { type Space, type SpaceRepository } from '@baton/core';
import { fromJson, jsonParam, timeParam, toInt, toMs, toText } from '../codec';
import type { SqlQueryable } from '../driver';
import { writeOne } from './guarded-write';

export interface SpaceRow {
  space_id: unknown;
  org_id: unknown;
  name: unknown;
  limits: unknown;
  created_at: unknown;
  updated_at: unknown;
}

export const columns = 'space_id, org_id, name, limits, created_at, updated_at';

export function toSpace(row: SpaceRow): Space {
  return {
    id: toText(row.space_id),
    orgId: toText(row.org_id),
    name: toText(row.name),
    limits: (fromJson(row.limits) ?? null) as Space['limits'],
    createdAt: toMs(row.created_at),
    updatedAt: toMs(row.updated_at),
  };
}

export function sqlSpaces(q: SqlQueryable): SpaceRepository {
  return {
    async insert(space) {
      await q.write(`INSERT INTO spaces (${columns}) VALUES ($1, $2, $3, $4::jsonb, $5, $6)`, [
        space.id,
        space.orgId,
        space.name,
        space.limits === null ? null : jsonParam(space.limits),
        timeParam(space.createdAt),
        timeParam(space.updatedAt),
      ]);
    },
    async get(id) {
      const [row] = await q.query<SpaceRow>(`SELECT ${columns} FROM spaces WHERE space_id = $1`, [id]);
      return row && toSpace(row);
    },
    async update(space) {
      await writeOne(
        q,
        'UPDATE spaces SET limits = $2::jsonb, updated_at = $3 WHERE space_id = $1 RETURNING 1',
        [space.id, space.limits === null ? null : jsonParam(space.limits), timeParam(space.updatedAt)],
        `update of missing space ${space.id}`,
      );
    },
    async countByOrg(orgId) {
      const [row] = await q.query<{ n: unknown }>('SELECT count(*) AS n FROM spaces WHERE org_id = $1', [orgId]);
      return toInt(row?.n);
    },
    async listByOrg(orgId, after, limit) {
      const rows = await q.query<SpaceRow>(
        `SELECT ${columns} FROM spaces WHERE org_id = $1 AND ($2::timestamptz IS NULL OR (created_at, space_id) > ($2::timestamptz, $3)) ORDER BY created_at, space_id LIMIT $4`,
        [orgId, after === null ? null : timeParam(after.createdAt), after?.id ?? null, limit],
      );
      return rows.map(toSpace);
    },
  };
}
