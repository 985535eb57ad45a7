import type { SqlParam, SqlQueryable } from '../driver';

/**
 * An UPDATE (or DELETE) that must change exactly one row, sent as a pipelined write
 * (driver.ts): `statement` ends in `RETURNING 1`, and baton_assert (migration 010) fails the
 * statement, and so the transaction, when it changed no row or several. `message` names the
 * bug should it ever happen.
 */
export function writeOne(q: SqlQueryable, statement: string, params: readonly SqlParam[], message: string): Promise<void> {
  return q.write(`WITH changed AS (${statement}) SELECT baton_assert(count(*) = 1, $${params.length + 1}) FROM changed`, [...params, message]);
}
