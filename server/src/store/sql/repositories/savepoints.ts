import type { SavepointRunner } from '@baton/core';
import type { SqlQueryable } from '../driver';

/**
 * Savepoints for admission's passed-over candidates. ROLLBACK TO SAVEPOINT undoes the writes
 * after it and releases the row locks they took (they belong to the aborted subtransaction), so
 * a candidate that could not be admitted leaves no lock that would break the lock order for the
 * next candidate. A kept savepoint is not released: COMMIT ends it, which saves a round trip.
 * Reusing one name is fine: a new SAVEPOINT of that name shadows the older one. SAVEPOINT and
 * the rollback of a passed-over candidate are pipelined writes: they ride with the candidate's
 * claims and with the next statement, and cost no round trip of their own.
 */
export function sqlSavepoints(q: SqlQueryable): SavepointRunner {
  return {
    async attempt(work) {
      await q.write('SAVEPOINT baton_candidate');
      let keep: boolean;
      try {
        keep = await work();
      } catch (error) {
        await q.query('ROLLBACK TO SAVEPOINT baton_candidate');
        throw error;
      }
      if (!keep) await q.write('ROLLBACK TO SAVEPOINT baton_candidate');
      return keep;
    },
  };
}
