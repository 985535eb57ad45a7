/**
 * A store raises this when it cannot reach its database: the connection was refused, reset or
 * ended, the database is shutting down or starting up, no connection came in time. Nothing is
 * known about a write in flight (its COMMIT may have landed): the server answers 503 UNAVAILABLE
 * with Retry-After, and the client retries with the same Idempotency-Key (docs/design/0004-error-codes.md). Only
 * the SQL store on PostgreSQL raises it (server/src/store/sql/unreachable.ts decides which
 * errors are this); memory and PGlite live in the process and never do.
 */
export class StoreUnavailable extends Error {
  override name = 'StoreUnavailable';
  constructor(
    /** Why, in a few words an operator can read on /readyz and in the log (no host, no SQL). */
    readonly reason: string,
    cause: unknown,
  ) {
    super(`the store cannot be reached: ${reason}`, { cause });
  }
}
