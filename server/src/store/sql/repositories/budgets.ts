import { type Budget, type BudgetRepository } from '@baton/core';
import { lockClause } from './lock-clause';
import { bigintParam, timeParam, toBigint, toInt, toMs, toText } from '../codec';
import type { SqlParam, SqlQueryable } from '../driver';
import { writeOne } from './guarded-write';

interface BudgetRow {
  space_id: unknown;
  id: unknown;
  name: unknown;
  currency: unknown;
  scale: unknown;
  limit_minor: unknown;
  available_minor: unknown;
  reserved_minor: unknown;
  settled_minor: unknown;
  created_at: unknown;
  updated_at: unknown;
}

const columns = 'space_id, id, name, currency, scale, limit_minor, available_minor, reserved_minor, settled_minor, created_at, updated_at';

function toBudget(row: BudgetRow): Budget {
  return {
    spaceId: toText(row.space_id),
    id: toText(row.id),
    name: toText(row.name),
    currency: toText(row.currency),
    scale: toInt(row.scale),
    limitMinor: toBigint(row.limit_minor),
    availableMinor: toBigint(row.available_minor),
    reservedMinor: toBigint(row.reserved_minor),
    settledMinor: toBigint(row.settled_minor),
    createdAt: toMs(row.created_at),
    updatedAt: toMs(row.updated_at),
  };
}

/** Parameters $1..$11 in `columns` order. */
function params(b: Budget): SqlParam[] {
  return [
    b.spaceId,
    b.id,
    b.name,
    b.currency,
    b.scale,
    bigintParam(b.limitMinor),
    bigintParam(b.availableMinor),
    bigintParam(b.reservedMinor),
    bigintParam(b.settledMinor),
    timeParam(b.createdAt),
    timeParam(b.updatedAt),
  ];
}

export function sqlBudgets(q: SqlQueryable): BudgetRepository {
  return {
    async insert(budget) {
      await q.write(`INSERT INTO budgets (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, params(budget));
    },
    async get(spaceId, id, options) {
      const lock = lockClause(options);
      const [row] = await q.query<BudgetRow>(`SELECT ${columns} FROM budgets WHERE space_id = $1 AND id = $2${lock}`, [spaceId, id]);
      return row && toBudget(row);
    },
    async getByName(spaceId, name) {
      const [row] = await q.query<BudgetRow>(`SELECT ${columns} FROM budgets WHERE space_id = $1 AND name = $2`, [spaceId, name]);
      return row && toBudget(row);
    },
    async list(spaceId, afterName, limit) {
      // Two statements rather than `($2 IS NULL OR name > $2)`, so each is a plain index range scan.
      const rows =
        afterName === null
          ? await q.query<BudgetRow>(`SELECT ${columns} FROM budgets WHERE space_id = $1 ORDER BY name LIMIT $2`, [spaceId, limit])
          : await q.query<BudgetRow>(`SELECT ${columns} FROM budgets WHERE space_id = $1 AND name > $2 ORDER BY name LIMIT $3`, [spaceId, afterName, limit]);
      return rows.map(toBudget);
    },
    async reserve(spaceId, id, amountMinor, nowMs) {
      // The guard repeats the rule core applied to what it read (available covers the amount);
      // failing it means a concurrent operation took the funds since: BT001, run again.
      await q.write(
        `WITH moved AS (
           UPDATE budgets SET available_minor = available_minor - $3, reserved_minor = reserved_minor + $3, updated_at = greatest(updated_at, $4)
           WHERE space_id = $1 AND id = $2 AND available_minor >= $3 RETURNING 1)
         SELECT baton_won(count(*) = 1, $5) FROM moved`,
        [spaceId, id, bigintParam(amountMinor), timeParam(nowMs), `budget ${id}: ${amountMinor} no longer available`],
      );
    },
    async update(budget) {
      await writeOne(q, `UPDATE budgets SET name = $3, currency = $4, scale = $5, limit_minor = $6, available_minor = $7, reserved_minor = $8,
           settled_minor = $9, created_at = $10, updated_at = $11
         WHERE space_id = $1 AND id = $2 RETURNING 1`, params(budget), `update of missing budget ${budget.id}`);
    },
  };
}
