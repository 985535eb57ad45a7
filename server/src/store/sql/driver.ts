/**
 * The little the SQL store needs from a PostgreSQL connection, so the same repositories and
 * migrations run on `pg` (PostgreSQL) and on PGlite (embedded). Rows come back as the driver
 * parsed them; server/src/store/sql/codec.ts turns them into domain values in one place.
 */

export type SqlParam = string | number | boolean | null | readonly string[] | readonly (string | number | null)[];

export interface SqlQueryable {
  /** One statement with $1.. parameters (extended protocol). */
  query<R>(text: string, params?: readonly SqlParam[]): Promise<R[]>;
  /**
   * A statement whose rows nobody reads (an INSERT, a guarded UPDATE). Inside a PostgreSQL
   * transaction it is sent at once and not waited for: it rides in the same round trip as the
   * next query or the COMMIT (pipelining), and its failure fails that query or the commit, so
   * nothing after a failed write is ever committed. A guard that must hold is therefore written
   * in the statement itself (`baton_assert`, migration 010), never checked on its result in JS.
   * Outside a transaction, and on PGlite (which has no network to save), it simply runs.
   */
  write(text: string, params?: readonly SqlParam[]): Promise<void>;
  /** A script of several statements without parameters (simple protocol): migrations. */
  exec(script: string): Promise<void>;
}

export interface SqlDriver extends SqlQueryable {
  readonly kind: 'postgres' | 'pglite';
  /**
   * Runs `fn` inside BEGIN ... COMMIT on one connection; ROLLBACK and rethrow when it throws.
   * Every statement of the transaction must go through the queryable it is given.
   */
  transaction<T>(fn: (q: SqlQueryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
