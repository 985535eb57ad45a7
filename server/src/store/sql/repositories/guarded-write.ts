import type { SqlParam, SqlQueryable } from '../driver';

/**
 * An UPDATE (or DELETE) that must change exactly one row, sent as a pipelined write
 * (driver.ts): `statement` ends in `RETURNING 1`, and baton_assert (migration 010) fails the
 * statement, and so the transaction, when it changed no row or several. `message` names the
 * bug should it ever happen.
 */
export function writeOne(q: SqlQueryable, statement: string, params: readonly SqlParam[], message: string): Promise<void> {
  const { text, params: all } = guardedOne(statement, params, message);
  return q.write(text, all);
}

/** writeOne's statement, for a coalescible write (coalesced-writes.ts) to send. */
export function guardedOne(statement: string, params: readonly SqlParam[], message: string): { text: string; params: SqlParam[] } {
  return { text: `WITH changed AS (${statement}) SELECT baton_assert(count(*) = 1, $${params.length + 1}) FROM changed`, params: [...params, message] };
}

/**
 * writeOne for many rows at once: `statement` updates from unnest($1..$n) and ends in
 * `RETURNING 1`; each of `rows` gives one value per array, in order, and exactly one row must
 * change per row given. Rows are distinct (coalesced-writes.ts flushes before a row repeats).
 */
export function guardedMany(statement: string, rows: readonly (readonly SqlParam[])[], message: string): { text: string; params: SqlParam[] } {
  const arrays = unnestColumns(rows);
  return {
    text: `WITH changed AS (${statement}) SELECT baton_assert(count(*) = $${arrays.length + 1}, $${arrays.length + 2}) FROM changed`,
    params: [...arrays, rows.length, `${message} (of ${rows.length})`],
  };
}

/** Rows of parameters as one array per column, in row order: the parameters of `unnest($1::t[], ...)`. */
export function unnestColumns(rows: readonly (readonly SqlParam[])[]): SqlParam[] {
  return rows[0]!.map((_, column) => rows.map((row) => row[column] as string | number | null));
}
