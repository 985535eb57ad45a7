import type { Org, PlanLimits, RetentionRepository } from '@baton/core';
import { fromJson, toText } from '../codec';
import type { SqlQueryable } from '../driver';

/** The spaces the retention sweep pages through (core/src/store/retention-repository.ts). */
export function sqlRetention(q: SqlQueryable): RetentionRepository {
  return {
    async spacesAfter(afterSpaceId, limit) {
      // A range of the spaces primary key, each joined to its organization by primary key.
      const rows = await q.query<{ space_id: unknown; plan: unknown; limits: unknown }>(
        `SELECT s.space_id, o.plan, o.limits FROM spaces s JOIN orgs o ON o.id = s.org_id
         WHERE $1::text IS NULL OR s.space_id > $1 ORDER BY s.space_id LIMIT $2`,
        [afterSpaceId, limit],
      );
      return rows.map((r) => ({
        spaceId: toText(r.space_id),
        org: { plan: toText(r.plan) as Org['plan'], limits: fromJson<Partial<PlanLimits> | null>(r.limits) ?? null },
      }));
    },
  };
}
