import type { Space, SpaceRepository } from '@baton/core';
import { timeParam, toInt, toMs, toText } from '../codec';
import type { SqlQueryable } from '../driver';

export interface SpaceRow {
  space_id: unknown;
  org_id: unknown;
  name: unknown;
  created_at: unknown;
  updated_at: unknown;
}

export const columns = 'space_id, org_id, name, created_at, updated_at';

export function toSpace(row: SpaceRow): Space {
  return {
    id: toText(row.space_id),
    orgId: toText(row.org_id),
    name: toText(row.name),
    createdAt: toMs(row.created_at),
    updatedAt: toMs(row.updated_at),
  };
}

export function sqlSpaces(q: SqlQueryable): SpaceRepository {
  return {
    async insert(space) {
      await q.query(`INSERT INTO spaces (${columns}) VALUES ($1, $2, $3, $4, $5)`, [
        space.id,
        space.orgId,
        space.name,
        timeParam(space.createdAt),
        timeParam(space.updatedAt),
      ]);
    },
    async get(id) {
      const [row] = await q.query<SpaceRow>(`SELECT ${columns} FROM spaces WHERE space_id = $1`, [id]);
      return row && toSpace(row);
    },
    async countByOrg(orgId) {
      const [row] = await q.query<{ n: unknown }>('SELECT count(*) AS n FROM spaces WHERE org_id = $1', [orgId]);
      return toInt(row?.n);
    },
  };
}
