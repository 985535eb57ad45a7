/**
 * The little the SQL store needs from a PostgreSQL connection, so the same repositories and
 * migrations run on `pg` (PostgreSQL) and on PGlite (embedded). Rows come back as the driver
 * parsed them; server/src/store/sql/codec.ts turns them into domain values in one place.
 */

export type SqlParam = string | number | boolean | null | readonly string[];

export interface SqlQueryable {
  /** One statement with $1.. parameters (extended protocol). */
  query<R>(text: string, params?: readonly SqlParam[]): Promise<R[]>;
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
