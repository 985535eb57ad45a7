import { type Reservation, type ReservationRepository, type ReservationState } from '@baton/core';
import { lockClause } from './lock-clause';
import { bigintParam, timeParam, timeParamOrNull, toBigint, toMs, toMsOrNull, toText } from '../codec';
import type { SqlParam, SqlQueryable } from '../driver';
import { writeOne } from './guarded-write';

interface ReservationRow {
  space_id: unknown;
  id: unknown;
  budget_id: unknown;
  scope_id: unknown;
  holder: unknown;
  amount_minor: unknown;
  settled_minor: unknown;
  remaining_minor: unknown;
  state: unknown;
  settle_by: unknown;
  overdue_at: unknown;
  created_at: unknown;
  updated_at: unknown;
}

const columns =
  'space_id, id, budget_id, scope_id, holder, amount_minor, settled_minor, remaining_minor, state, settle_by, overdue_at, created_at, updated_at';

function toReservation(row: ReservationRow): Reservation {
  return {
    spaceId: toText(row.space_id),
    id: toText(row.id),
    budgetId: toText(row.budget_id),
    scopeId: toText(row.scope_id),
    holder: toText(row.holder),
    amountMinor: toBigint(row.amount_minor),
    settledMinor: toBigint(row.settled_minor),
    remainingMinor: toBigint(row.remaining_minor),
    state: toText(row.state) as ReservationState,
    settleBy: toMsOrNull(row.settle_by),
    overdueAt: toMsOrNull(row.overdue_at),
    createdAt: toMs(row.created_at),
    updatedAt: toMs(row.updated_at),
  };
}

/** Parameters $1..$13 in `columns` order. */
function params(r: Reservation): SqlParam[] {
  return [
    r.spaceId,
    r.id,
    r.budgetId,
    r.scopeId,
    r.holder,
    bigintParam(r.amountMinor),
    bigintParam(r.settledMinor),
    bigintParam(r.remainingMinor),
    r.state,
    timeParamOrNull(r.settleBy),
    timeParamOrNull(r.overdueAt),
    timeParam(r.createdAt),
    timeParam(r.updatedAt),
  ];
}

export function sqlReservations(q: SqlQueryable): ReservationRepository {
  return {
    async insert(reservation) {
      await q.write(`INSERT INTO reservations (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`, params(reservation));
    },
    async get(spaceId, id, options) {
      const lock = lockClause(options);
      const [row] = await q.query<ReservationRow>(`SELECT ${columns} FROM reservations WHERE space_id = $1 AND id = $2${lock}`, [spaceId, id]);
      return row && toReservation(row);
    },
    async update(reservation) {
      await writeOne(q, `UPDATE reservations SET budget_id = $3, scope_id = $4, holder = $5, amount_minor = $6, settled_minor = $7, remaining_minor = $8,
           state = $9, settle_by = $10, overdue_at = $11, created_at = $12, updated_at = $13
         WHERE space_id = $1 AND id = $2 RETURNING 1`, params(reservation), `update of missing reservation ${reservation.id}`);
    },
    async list(spaceId, budgetId, states, after, limit) {
      // As barriers.list: the state filter a parameter (NULL: any), the position a row
      // comparison, so a page is one range scan of reservations_by_budget (migration 018).
      const stateParam = states === null ? null : [...states];
      const rows =
        after === null
          ? await q.query<ReservationRow>(
              `SELECT ${columns} FROM reservations WHERE space_id = $1 AND budget_id = $2 AND ($3::text[] IS NULL OR state = ANY($3::text[]))
               ORDER BY created_at, id LIMIT $4`,
              [spaceId, budgetId, stateParam, limit],
            )
          : await q.query<ReservationRow>(
              `SELECT ${columns} FROM reservations WHERE space_id = $1 AND budget_id = $2 AND ($3::text[] IS NULL OR state = ANY($3::text[]))
                 AND (created_at, id) > ($4::timestamptz, $5)
               ORDER BY created_at, id LIMIT $6`,
              [spaceId, budgetId, stateParam, timeParam(after.createdAt), after.id, limit],
            );
      return rows.map(toReservation);
    },
    async listActive(spaceId, budgetId) {
      const rows = await q.query<ReservationRow>(
        `SELECT ${columns} FROM reservations WHERE space_id = $1 AND budget_id = $2 AND state = 'ACTIVE' ORDER BY created_at, id`,
        [spaceId, budgetId],
      );
      return rows.map(toReservation);
    },
    async claimOverdue(nowMs, limit) {
      // SKIP LOCKED: a row another sweeper has claimed is passed over, not waited for, and it
      // leaves this partial index (overdue_at is set) when that sweeper commits.
      const rows = await q.query<ReservationRow>(
        `SELECT ${columns} FROM reservations
         WHERE state = 'ACTIVE' AND overdue_at IS NULL AND settle_by IS NOT NULL AND settle_by <= $1
         ORDER BY settle_by, id LIMIT $2
         FOR UPDATE SKIP LOCKED`,
        [timeParam(nowMs), limit],
      );
      return rows.map(toReservation);
    },
  };
}
