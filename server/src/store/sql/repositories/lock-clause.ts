import type { LockOptions } from '@baton/core';

/**
 * The row-lock suffix of a SELECT: FOR UPDATE, or FOR UPDATE NOWAIT, which fails at once with
 * SQLSTATE 55P03 instead of waiting; SqlStore retries the transaction then (sql-store.ts).
 */
export const lockClause = (options: LockOptions | undefined): string => (options?.forUpdate ? (options.noWait ? ' FOR UPDATE NOWAIT' : ' FOR UPDATE') : '');
