import type { SavepointRunner } from '@baton/core';
import { CoalescingQueryable } from '../coalesced-writes';
import type { SqlQueryable } from '../driver';

/**
 * Savepoints for admission's passed-over candidates. ROLLBACK TO SAVEPOINT undoes the writes
 * after it and releases the row locks they took (they belong to the aborted subtransaction), so
 * a candidate that could not be admitted leaves no lock that would break the lock order for the
 * next candidate. A kept savepoint is not released: COMMIT ends it, which saves a round trip.
 * Reusing one name is fine: a new SAVEPOINT of that name shadows the older one. SAVEPOINT and
 * the rollback of a passed-over candidate are pipelined writes: they ride with the candidate's
 * claims and with the next statement, and cost no round trip of their own. Journal appends are
 * held in the transaction until its COMMIT (coalesced-writes.ts), so the database's rollback
 * cannot reach them: the rollback drops the ones held since the savepoint as well.
 */
export function sqlSavepoints(q: SqlQueryable): SavepointRunner {
  const held = q instanceof CoalescingQueryable ? q : undefined;
  return {
    async attempt(work) {
      const mark = held?.savepointMark();
      await q.write('SAVEPOINT baton_candidate');
      let keep: boolean;
      try {
        keep = await work();
      } catch (error) {
        await q.query('ROLLBACK TO SAVEPOINT baton_candidate');
        if (mark) held!.rollBackTo(mark);
        throw error;
      }
      if (!keep) {
        await q.write('ROLLBACK TO SAVEPOINT baton_candidate');
        if (mark) held!.rollBackTo(mark);
      }
      return keep;
    },
  };
}
