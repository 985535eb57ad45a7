import type { SqlParam, SqlQueryable } from '../driver';

/**
 * An UPDATE (or DELETE) that must change exactly one row, sent as a pipelined write
 * (driver.ts): `statement` ends in `RETURNING 1`, and baton_assert (migration 010) fails the
 * statement, and so the transaction, when it changed no row or several. `message` names the
 * bug should it ever happen.
 */
export function writeOne(q: SqlQueryable, statement: string, params: readonly SqlParam[], message: string): Promise<void> {
  const { text, params: all } = loneStatement(guardedOne(statement, params, message));
  return q.write(text, all);
}

/**
 * A write in parts, so that coalesced-writes.ts can send it alone (loneStatement) or as one
 * data-modifying CTE of a statement that carries several writes (combinedStatement there).
 */
export interface WriteParts {
  /** A data-modifying statement on $1..$n of `params`; when `check` is set it ends in `RETURNING 1`. */
  dml: string;
  params: SqlParam[];
  /**
   * The rows it must return: `baton_assert` (migration 010) fails the statement, a bug, when
   * another count comes back; `baton_won` (migration 013) fails it as a lost race (BT001), which
   * the store runs again.
   */
  check?: { guard: 'baton_assert' | 'baton_won'; rows: number; message: string };
}

/** `write` as a statement of its own. */
export function loneStatement(write: WriteParts): { text: string; params: SqlParam[] } {
  if (write.check === undefined) return { text: write.dml, params: write.params };
  const n = write.params.length;
  return {
    text: `WITH changed AS (${write.dml}) SELECT ${write.check.guard}(count(*) = $${n + 1}, $${n + 2}) FROM changed`,
    params: [...write.params, write.check.rows, write.check.message],
  };
}

/** writeOne's write, for a coalescible write (coalesced-writes.ts) to send. */
export function guardedOne(statement: string, params: readonly SqlParam[], message: string): WriteParts {
  return { dml: statement, params: [...params], check: { guard: 'baton_assert', rows: 1, message } };
}

/**
 * writeOne for many rows at once: `statement` updates from unnest($1..$n) and ends in
 * `RETURNING 1`; each of `rows` gives one value per array, in order, and exactly one row must
 * change per row given. Rows are distinct (coalesced-writes.ts flushes before a row repeats).
 */
export function guardedMany(statement: string, rows: readonly (readonly SqlParam[])[], message: string): WriteParts {
  return { dml: statement, params: unnestColumns(rows), check: { guard: 'baton_assert', rows: rows.length, message: `${message} (of ${rows.length})` } };
}

/** Rows of parameters as one array per column, in row order: the parameters of `unnest($1::t[], ...)`. */
export function unnestColumns(rows: readonly (readonly SqlParam[])[]): SqlParam[] {
  return rows[0]!.map((_, column) => rows.map((row) => row[column] as string | number | null));
}
