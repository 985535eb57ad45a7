import { type Allowance, type AllowanceRepository, type AllowanceWaiter, type AllowanceWaiterRepository, type Consumption, type ConsumptionRepository } from '@baton/core';
import { lockClause } from './lock-clause';
import { timeParam, timeParamOrNull, toInt, toMs, toMsOrNull, toText, toTextOrNull } from '../codec';
import type { SqlParam, SqlQueryable } from '../driver';
import { writeOne } from './guarded-write';

type Row = Record<string, unknown>;

const allowanceColumns =
  'space_id, id, name, units_limit, window_seconds, window_starts_at, used_units, cooldown_until, cooldown_reason, next_position, wake_at, created_at, updated_at';

function toAllowance(r: Row): Allowance {
  return {
    spaceId: toText(r.space_id),
    id: toText(r.id),
    name: toText(r.name),
    unitsLimit: toInt(r.units_limit),
    windowSeconds: toInt(r.window_seconds),
    windowStartsAt: toMs(r.window_starts_at),
    usedUnits: toInt(r.used_units),
    cooldownUntil: toMsOrNull(r.cooldown_until),
    cooldownReason: toTextOrNull(r.cooldown_reason),
    nextPosition: toInt(r.next_position),
    wakeAt: toMsOrNull(r.wake_at),
    createdAt: toMs(r.created_at),
    updatedAt: toMs(r.updated_at),
  };
}

/** Parameters $1..$13 in `allowanceColumns` order. */
function allowanceParams(a: Allowance): SqlParam[] {
  return [
    a.spaceId, a.id, a.name, a.unitsLimit, a.windowSeconds, timeParam(a.windowStartsAt), a.usedUnits,
    timeParamOrNull(a.cooldownUntil), a.cooldownReason, a.nextPosition, timeParamOrNull(a.wakeAt), timeParam(a.createdAt), timeParam(a.updatedAt),
  ];
}

export function sqlAllowances(q: SqlQueryable): AllowanceRepository {
  return {
    async insert(a) {
      await q.write(`INSERT INTO allowances (${allowanceColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`, allowanceParams(a));
    },
    async get(spaceId, id, options) {
      const lock = lockClause(options);
      const [row] = await q.query<Row>(`SELECT ${allowanceColumns} FROM allowances WHERE space_id = $1 AND id = $2${lock}`, [spaceId, id]);
      return row && toAllowance(row);
    },
    async getByName(spaceId, name) {
      const [row] = await q.query<Row>(`SELECT ${allowanceColumns} FROM allowances WHERE space_id = $1 AND name = $2`, [spaceId, name]);
      return row && toAllowance(row);
    },
    async list(spaceId, afterName, limit) {
      const rows =
        afterName === null
          ? await q.query<Row>(`SELECT ${allowanceColumns} FROM allowances WHERE space_id = $1 ORDER BY name LIMIT $2`, [spaceId, limit])
          : await q.query<Row>(`SELECT ${allowanceColumns} FROM allowances WHERE space_id = $1 AND name > $2 ORDER BY name LIMIT $3`, [spaceId, afterName, limit]);
      return rows.map(toAllowance);
    },
    async update(a) {
      await writeOne(q, `UPDATE allowances SET name = $3, units_limit = $4, window_seconds = $5, window_starts_at = $6, used_units = $7, cooldown_until = $8,
           cooldown_reason = $9, next_position = $10, wake_at = $11, created_at = $12, updated_at = $13
         WHERE space_id = $1 AND id = $2 RETURNING 1`, allowanceParams(a), `update of missing allowance ${a.id}`);
    },
    async claimDue(nowMs, limit) {
      // SKIP LOCKED: a line another server is serving is passed over, not waited for.
      const rows = await q.query<Row>(
        `SELECT ${allowanceColumns} FROM allowances WHERE wake_at IS NOT NULL AND wake_at <= $1 ORDER BY wake_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`,
        [timeParam(nowMs), limit],
      );
      return rows.map(toAllowance);
    },
  };
}

const waiterColumns = 'space_id, id, allowance_id, position, scope_id, holder, units, state, granted_at, expires_at, created_at, updated_at';

function toWaiter(r: Row): AllowanceWaiter {
  return {
    spaceId: toText(r.space_id),
    id: toText(r.id),
    allowanceId: toText(r.allowance_id),
    position: toInt(r.position),
    scopeId: toText(r.scope_id),
    holder: toText(r.holder),
    units: toInt(r.units),
    state: toText(r.state) as AllowanceWaiter['state'],
    grantedAt: toMsOrNull(r.granted_at),
    expiresAt: toMs(r.expires_at),
    createdAt: toMs(r.created_at),
    updatedAt: toMs(r.updated_at),
  };
}

function waiterParams(w: AllowanceWaiter): SqlParam[] {
  return [w.spaceId, w.id, w.allowanceId, w.position, w.scopeId, w.holder, w.units, w.state, timeParamOrNull(w.grantedAt), timeParam(w.expiresAt), timeParam(w.createdAt), timeParam(w.updatedAt)];
}

export function sqlAllowanceWaiters(q: SqlQueryable): AllowanceWaiterRepository {
  return {
    async insert(w) {
      await q.write(`INSERT INTO allowance_waiters (${waiterColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`, waiterParams(w));
    },
    async get(spaceId, id, options) {
      const lock = lockClause(options);
      const [row] = await q.query<Row>(`SELECT ${waiterColumns} FROM allowance_waiters WHERE space_id = $1 AND id = $2${lock}`, [spaceId, id]);
      return row && toWaiter(row);
    },
    async update(w) {
      await writeOne(q, `UPDATE allowance_waiters SET allowance_id = $3, position = $4, scope_id = $5, holder = $6, units = $7, state = $8, granted_at = $9,
           expires_at = $10, created_at = $11, updated_at = $12
         WHERE space_id = $1 AND id = $2 RETURNING 1`, waiterParams(w), `update of missing waiter ${w.id}`);
    },
    async listWaiting(spaceId, allowanceId, limit) {
      const rows = await q.query<Row>(
        `SELECT ${waiterColumns} FROM allowance_waiters WHERE space_id = $1 AND allowance_id = $2 AND state = 'WAITING' ORDER BY position LIMIT $3`,
        [spaceId, allowanceId, limit],
      );
      return rows.map(toWaiter);
    },
    async countWaiting(spaceId, allowanceId) {
      const [row] = await q.query<{ n: unknown }>(`SELECT count(*) AS n FROM allowance_waiters WHERE space_id = $1 AND allowance_id = $2 AND state = 'WAITING'`, [spaceId, allowanceId]);
      return toInt(row?.n ?? 0);
    },
    async countWaitingInSpace(spaceId) {
      const [row] = await q.query<{ n: unknown }>(`SELECT count(*) AS n FROM allowance_waiters WHERE space_id = $1 AND state = 'WAITING'`, [spaceId]);
      return toInt(row?.n ?? 0);
    },
    async censusLines(limit) {
      // Grouped over allowance_waiters_line (the WAITING rows only), then named: the join reads
      // at most `limit` allowances.
      const rows = await q.query<Row>(
        `WITH lines AS (
           SELECT space_id, allowance_id, count(*) AS waiting, min(created_at) AS oldest_waiting_at
           FROM allowance_waiters WHERE state = 'WAITING' GROUP BY space_id, allowance_id
           ORDER BY waiting DESC, space_id, allowance_id LIMIT $1
         )
         SELECT l.space_id, l.allowance_id, a.name, l.waiting, l.oldest_waiting_at
         FROM lines l JOIN allowances a ON a.space_id = l.space_id AND a.id = l.allowance_id
         ORDER BY l.waiting DESC, l.space_id, l.allowance_id`,
        [limit],
      );
      return rows.map((r) => ({
        spaceId: toText(r.space_id),
        allowanceId: toText(r.allowance_id),
        allowanceName: toText(r.name),
        waiting: toInt(r.waiting),
        oldestWaitingAt: toMs(r.oldest_waiting_at),
      }));
    },
  };
}

const consumptionColumns = 'space_id, id, allowance_id, scope_id, holder, units, work_key, window_starts_at, created_at';

function toConsumption(r: Row): Consumption {
  return {
    spaceId: toText(r.space_id),
    id: toText(r.id),
    allowanceId: toText(r.allowance_id),
    scopeId: toText(r.scope_id),
    holder: toText(r.holder),
    units: toInt(r.units),
    workKey: toTextOrNull(r.work_key),
    windowStartsAt: toMs(r.window_starts_at),
    createdAt: toMs(r.created_at),
  };
}

export function sqlConsumptions(q: SqlQueryable): ConsumptionRepository {
  return {
    async insert(c) {
      await q.write(`INSERT INTO allowance_consumptions (${consumptionColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, [
        c.spaceId, c.id, c.allowanceId, c.scopeId, c.holder, c.units, c.workKey, timeParam(c.windowStartsAt), timeParam(c.createdAt),
      ]);
    },
    async getByWorkKey(spaceId, allowanceId, workKey) {
      const [row] = await q.query<Row>(`SELECT ${consumptionColumns} FROM allowance_consumptions WHERE space_id = $1 AND allowance_id = $2 AND work_key = $3`, [
        spaceId, allowanceId, workKey,
      ]);
      return row && toConsumption(row);
    },
  };
}
