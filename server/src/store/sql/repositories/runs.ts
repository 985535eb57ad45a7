import { InvariantViolation, maxGateLevels, type Run, type RunRepository, type RunState } from '@baton/core';
import { timeParam, timeParamOrNull, toInt, toMs, toMsOrNull, toText, toTextOrNull } from '../codec';
import type { SqlQueryable } from '../driver';
import { lockClause } from './lock-clause';

interface RunRow {
  space_id: unknown;
  scope_id: unknown;
  parent_scope_id: unknown;
  name: unknown;
  state: unknown;
  child_limit: unknown;
  children: unknown;
  cascade_pending: unknown;
  created_at: unknown;
  updated_at: unknown;
  ended_at: unknown;
}

const columns = 'space_id, scope_id, parent_scope_id, name, state, child_limit, children, cascade_pending, created_at, updated_at, ended_at';
const prefixed = (alias: string): string => columns.split(', ').map((c) => `${alias}.${c}`).join(', ');

function toRun(row: RunRow): Run {
  if (typeof row.cascade_pending !== 'boolean') throw new InvariantViolation(`sql store: cascade_pending is not a boolean: ${String(row.cascade_pending)}`);
  return {
    spaceId: toText(row.space_id),
    scopeId: toText(row.scope_id),
    parentScopeId: toTextOrNull(row.parent_scope_id),
    name: toTextOrNull(row.name),
    state: toText(row.state) as RunState,
    childLimit: toInt(row.child_limit),
    children: toInt(row.children),
    cascadePending: row.cascade_pending,
    createdAt: toMs(row.created_at),
    updatedAt: toMs(row.updated_at),
    endedAt: toMsOrNull(row.ended_at),
  };
}

/** Runs (migration 025). */
export function sqlRuns(q: SqlQueryable): RunRepository {
  return {
    async insert(r) {
      const rows = await q.query(
        `INSERT INTO runs (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT (space_id, scope_id) DO NOTHING RETURNING 1`,
        [r.spaceId, r.scopeId, r.parentScopeId, r.name, r.state, r.childLimit, r.children, r.cascadePending, timeParam(r.createdAt), timeParam(r.updatedAt), timeParamOrNull(r.endedAt)],
      );
      return rows.length === 1;
    },
    async get(spaceId, scopeId, options) {
      const [row] = await q.query<RunRow>(`SELECT ${columns} FROM runs WHERE space_id = $1 AND scope_id = $2${lockClause(options)}`, [spaceId, scopeId]);
      return row && toRun(row);
    },
    async governing(spaceId, scopeId) {
      // Up through gate scopes (migration 027's index), nearest first; only the run found is locked.
      const [row] = await q.query<RunRow>(
        `WITH RECURSIVE up(scope_id, level) AS (
           SELECT $2::text COLLATE "C", 0
           UNION ALL
           SELECT g.parent_scope_id, up.level + 1 FROM up JOIN task_groups g ON g.space_id = $1 AND g.scope_id = up.scope_id
            WHERE g.parent_scope_id IS NOT NULL AND up.level < $3
         )
         SELECT ${prefixed('r')} FROM runs r JOIN up ON r.space_id = $1 AND r.scope_id = up.scope_id
         ORDER BY up.level LIMIT 1 FOR SHARE OF r`,
        [spaceId, scopeId, maxGateLevels],
      );
      return row && toRun(row);
    },
    async update(r) {
      await q.write(
        `UPDATE runs SET state = $3, children = $4, cascade_pending = $5, updated_at = $6, ended_at = $7 WHERE space_id = $1 AND scope_id = $2`,
        [r.spaceId, r.scopeId, r.state, r.children, r.cascadePending, timeParam(r.updatedAt), timeParamOrNull(r.endedAt)],
      );
    },
    async activeChildren(spaceId, parentScopeId, limit) {
      const rows = await q.query<RunRow>(
        `SELECT ${columns} FROM runs WHERE space_id = $1 AND parent_scope_id = $2 AND state = 'ACTIVE' ORDER BY created_at, scope_id LIMIT $3 FOR UPDATE`,
        [spaceId, parentScopeId, limit],
      );
      return rows.map(toRun);
    },
    async children(spaceId, parentScopeId, afterScopeId, limit) {
      const rows = await q.query<RunRow>(
        `SELECT ${columns} FROM runs WHERE space_id = $1 AND parent_scope_id = $2 AND ($3::text IS NULL OR scope_id > $3) ORDER BY scope_id LIMIT $4`,
        [spaceId, parentScopeId, afterScopeId, limit],
      );
      return rows.map(toRun);
    },
    async claimCascading(limit) {
      const rows = await q.query<RunRow>(`SELECT ${columns} FROM runs WHERE cascade_pending ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED`, [limit]);
      return rows.map(toRun);
    },
  };
}
