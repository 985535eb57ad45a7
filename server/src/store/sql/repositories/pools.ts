import { assert, assertCapacityUnits, assertPool, type CapacityRepository, type Pool, type PoolRepository } from '@baton/core';
import { timeParam, toInt, toMs, toText } from '../codec';
import type { SqlParam, SqlQueryable } from '../driver';

/** Columns of pools and work_limits alike, but for the name of the limit column. */
interface CapacityRow {
  space_id: unknown;
  id: unknown;
  name: unknown;
  limit: unknown;
  in_use: unknown;
  created_at: unknown;
  updated_at: unknown;
}

/** What tells pools and work_limits apart; every statement below is shared. */
export interface CapacityTable<T> {
  table: 'pools' | 'work_limits';
  limitColumn: 'capacity' | 'max_concurrent';
  /** The domain row from the columns both tables share and the value of the limit column. */
  fromRow(counted: Counted, limit: number): T;
  limitOf(row: T): number;
  check(row: T): void;
}

export interface Counted {
  spaceId: string;
  id: string;
  name: string;
  inUse: number;
  createdAt: number;
  updatedAt: number;
}

const pools: CapacityTable<Pool> = {
  table: 'pools',
  limitColumn: 'capacity',
  fromRow: (counted, capacity) => ({ ...counted, capacity }),
  limitOf: (p) => p.capacity,
  check: assertPool,
};

export const sqlPools = (q: SqlQueryable): PoolRepository => sqlCapacity(q, pools);

function common(row: CapacityRow): Counted {
  return {
    spaceId: toText(row.space_id),
    id: toText(row.id),
    name: toText(row.name),
    inUse: toInt(row.in_use),
    createdAt: toMs(row.created_at),
    updatedAt: toMs(row.updated_at),
  };
}

/**
 * A claim and a release are each one UPDATE that decides and writes at once: under READ
 * COMMITTED, concurrent claims on one row queue on its row lock and each re-checks the WHERE
 * clause against the row the one before committed, so inUse never passes the limit.
 */
export function sqlCapacity<T extends Counted>(q: SqlQueryable, spec: CapacityTable<T>): CapacityRepository<T> {
  const { table, limitColumn } = spec;
  const columns = `space_id, id, name, ${limitColumn} AS "limit", in_use, created_at, updated_at`;
  const toDomain = (row: CapacityRow): T => {
    const value = spec.fromRow(common(row), toInt(row.limit));
    spec.check(value);
    return value;
  };
  const params = (r: T): SqlParam[] => [r.spaceId, r.id, r.name, spec.limitOf(r), r.inUse, timeParam(r.createdAt), timeParam(r.updatedAt)];

  return {
    async insert(row) {
      // DO NOTHING on the name only: a create racing another of the same name answers as a
      // repeat create (core/src/pools/service.ts); a duplicate id is still an error.
      const inserted = await q.query(
        `INSERT INTO ${table} (space_id, id, name, ${limitColumn}, in_use, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (space_id, name) DO NOTHING RETURNING id`,
        params(row),
      );
      return inserted.length === 1;
    },
    async get(spaceId, id) {
      const [row] = await q.query<CapacityRow>(`SELECT ${columns} FROM ${table} WHERE space_id = $1 AND id = $2`, [spaceId, id]);
      return row && toDomain(row);
    },
    async getByName(spaceId, name) {
      const [row] = await q.query<CapacityRow>(`SELECT ${columns} FROM ${table} WHERE space_id = $1 AND name = $2`, [spaceId, name]);
      return row && toDomain(row);
    },
    async list(spaceId, afterName, limit) {
      // Two statements rather than `($2 IS NULL OR name > $2)`, so each is a plain index range scan.
      const rows =
        afterName === null
          ? await q.query<CapacityRow>(`SELECT ${columns} FROM ${table} WHERE space_id = $1 ORDER BY name LIMIT $2`, [spaceId, limit])
          : await q.query<CapacityRow>(`SELECT ${columns} FROM ${table} WHERE space_id = $1 AND name > $2 ORDER BY name LIMIT $3`, [spaceId, afterName, limit]);
      return rows.map(toDomain);
    },
    async claim(spaceId, id, units, nowMs) {
      assertCapacityUnits(units);
      // `limit - in_use >= units` rather than `in_use + units <= limit`: no sum to overflow.
      const [row] = await q.query<CapacityRow>(
        `UPDATE ${table} SET in_use = in_use + $3, updated_at = $4
         WHERE space_id = $1 AND id = $2 AND ${limitColumn} - in_use >= $3 RETURNING ${columns}`,
        [spaceId, id, units, timeParam(nowMs)],
      );
      return row && toDomain(row);
    },
    async release(spaceId, id, units, nowMs) {
      assertCapacityUnits(units);
      // The WHERE clause turns an over-release into an assertion with a message; the table's
      // CHECK (in_use >= 0) would refuse it anyway.
      const [row] = await q.query<CapacityRow>(
        `UPDATE ${table} SET in_use = in_use - $3, updated_at = $4
         WHERE space_id = $1 AND id = $2 AND in_use >= $3 RETURNING ${columns}`,
        [spaceId, id, units, timeParam(nowMs)],
      );
      assert(row, `release of ${units} units from ${table} ${id}: no such row, or fewer in use`);
      return toDomain(row);
    },
  };
}
