import { type Org, type OrgRepository, type PlanLimits } from '@baton/core';
import { fromJson, jsonParam, timeParam, toInt, toMs, toText } from '../codec';
import type { SqlQueryable } from '../driver';
import { writeOne } from './guarded-write';

export interface OrgRow {
  id: unknown;
  name: unknown;
  plan: unknown;
  limits: unknown;
  created_at: unknown;
  updated_at: unknown;
}

export const columns = 'id, name, plan, limits, created_at, updated_at';

export function toOrg(row: OrgRow): Org {
  return {
    id: toText(row.id),
    name: toText(row.name),
    plan: toText(row.plan) as Org['plan'],
    limits: fromJson<Partial<PlanLimits> | null>(row.limits),
    createdAt: toMs(row.created_at),
    updatedAt: toMs(row.updated_at),
  };
}

export function sqlOrgs(q: SqlQueryable): OrgRepository {
  return {
    async insert(org) {
      await q.write(`INSERT INTO orgs (${columns}) VALUES ($1, $2, $3, $4::jsonb, $5, $6)`, [
        org.id,
        org.name,
        org.plan,
        org.limits === null ? null : jsonParam(org.limits),
        timeParam(org.createdAt),
        timeParam(org.updatedAt),
      ]);
    },
    async get(id) {
      const [row] = await q.query<OrgRow>(`SELECT ${columns} FROM orgs WHERE id = $1`, [id]);
      return row && toOrg(row);
    },
    async update(org) {
      await writeOne(q, `UPDATE orgs SET name = $2, plan = $3, limits = $4::jsonb, created_at = $5, updated_at = $6 WHERE id = $1 RETURNING 1`, [
        org.id,
        org.name,
        org.plan,
        org.limits === null ? null : jsonParam(org.limits),
        timeParam(org.createdAt),
        timeParam(org.updatedAt),
      ], `update of missing org ${org.id}`);
    },
    async count() {
      const [row] = await q.query<{ n: unknown }>('SELECT count(*) AS n FROM orgs');
      return toInt(row?.n);
    },
    async list(after, limit) {
      // Operator-only and small: the (created_at, id) row comparison pages without an index of its own.
      const rows = await q.query<OrgRow>(
        `SELECT ${columns} FROM orgs WHERE $1::timestamptz IS NULL OR (created_at, id) > ($1::timestamptz, $2) ORDER BY created_at, id LIMIT $3`,
        [after === null ? null : timeParam(after.createdAt), after?.id ?? null, limit],
      );
      return rows.map(toOrg);
    },
  };
}
