import { type Barrier, type BarrierArrival, type BarrierRepository, type BarrierState } from '@baton/core';
import { lockClause } from './lock-clause';
import { timeParam, timeParamOrNull, toInt, toMs, toMsOrNull, toText } from '../codec';
import type { SqlParam, SqlQueryable } from '../driver';
import { writeOne } from './guarded-write';

interface BarrierRow {
  space_id: unknown;
  id: unknown;
  scope_id: unknown;
  target: unknown;
  epoch: unknown;
  state: unknown;
  arrivals: unknown;
  released_at: unknown;
  created_at: unknown;
  updated_at: unknown;
}

interface ArrivalRow {
  space_id: unknown;
  barrier_id: unknown;
  epoch: unknown;
  arrival_key: unknown;
  arrived_at: unknown;
}

const columns = 'space_id, id, scope_id, target, epoch, state, arrivals, released_at, created_at, updated_at';
const arrivalColumns = 'space_id, barrier_id, epoch, arrival_key, arrived_at';

function toBarrier(row: BarrierRow): Barrier {
  return {
    spaceId: toText(row.space_id),
    id: toText(row.id),
    scopeId: toText(row.scope_id),
    target: toInt(row.target),
    epoch: toInt(row.epoch),
    state: toText(row.state) as BarrierState,
    arrivals: toInt(row.arrivals),
    releasedAt: toMsOrNull(row.released_at),
    createdAt: toMs(row.created_at),
    updatedAt: toMs(row.updated_at),
  };
}

function toArrival(row: ArrivalRow): BarrierArrival {
  return {
    spaceId: toText(row.space_id),
    barrierId: toText(row.barrier_id),
    epoch: toInt(row.epoch),
    arrivalKey: toText(row.arrival_key),
    arrivedAt: toMs(row.arrived_at),
  };
}

/** Parameters $1..$10 in `columns` order. */
function params(b: Barrier): SqlParam[] {
  return [b.spaceId, b.id, b.scopeId, b.target, b.epoch, b.state, b.arrivals, timeParamOrNull(b.releasedAt), timeParam(b.createdAt), timeParam(b.updatedAt)];
}

export function sqlBarriers(q: SqlQueryable): BarrierRepository {
  return {
    async insert(barrier) {
      await q.write(`INSERT INTO barriers (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, params(barrier));
    },
    async get(spaceId, id, options) {
      const lock = lockClause(options);
      const [row] = await q.query<BarrierRow>(`SELECT ${columns} FROM barriers WHERE space_id = $1 AND id = $2${lock}`, [spaceId, id]);
      return row && toBarrier(row);
    },
    async list(spaceId, states, after, limit) {
      // The state filter is a parameter either way (NULL: any state); the position is a row
      // comparison, so each page is one range scan of barriers_by_created.
      const stateParam = states === null ? null : [...states];
      const rows =
        after === null
          ? await q.query<BarrierRow>(
              `SELECT ${columns} FROM barriers WHERE space_id = $1 AND ($2::text[] IS NULL OR state = ANY($2::text[]))
               ORDER BY created_at, id LIMIT $3`,
              [spaceId, stateParam, limit],
            )
          : await q.query<BarrierRow>(
              `SELECT ${columns} FROM barriers WHERE space_id = $1 AND ($2::text[] IS NULL OR state = ANY($2::text[])) AND (created_at, id) > ($3::timestamptz, $4)
               ORDER BY created_at, id LIMIT $5`,
              [spaceId, stateParam, timeParam(after.createdAt), after.id, limit],
            );
      return rows.map(toBarrier);
    },
    async update(barrier) {
      await writeOne(q, `UPDATE barriers SET scope_id = $3, target = $4, epoch = $5, state = $6, arrivals = $7, released_at = $8, created_at = $9, updated_at = $10
         WHERE space_id = $1 AND id = $2 RETURNING 1`, params(barrier), `update of missing barrier ${barrier.id}`);
    },
    async insertArrival(a) {
      await q.write(`INSERT INTO barrier_arrivals (${arrivalColumns}) VALUES ($1, $2, $3, $4, $5)`, [a.spaceId, a.barrierId, a.epoch, a.arrivalKey, timeParam(a.arrivedAt)]);
    },
    async getArrival(spaceId, barrierId, epoch, arrivalKey) {
      const [row] = await q.query<ArrivalRow>(
        `SELECT ${arrivalColumns} FROM barrier_arrivals WHERE space_id = $1 AND barrier_id = $2 AND epoch = $3 AND arrival_key = $4`,
        [spaceId, barrierId, epoch, arrivalKey],
      );
      return row && toArrival(row);
    },
    async countArrivals(spaceId, barrierId, epoch) {
      const [row] = await q.query<{ n: unknown }>('SELECT count(*) AS n FROM barrier_arrivals WHERE space_id = $1 AND barrier_id = $2 AND epoch = $3', [
        spaceId,
        barrierId,
        epoch,
      ]);
      return toInt(row?.n);
    },
  };
}
