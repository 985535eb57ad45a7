import { BatonError } from '../errors';
import type { OpContext } from '../context';

/** docs/design/0015-batches.md: a batch holds 1 to 100 items. */
export const maxBatchItems = 100;

/**
 * Savepoints one batch transaction keeps at most where it can choose (admit-batch's admissions
 * with resources): PostgreSQL caches 64 subtransactions per backend, and a transaction that
 * keeps more overflows the cache, after which every snapshot of every session consults
 * pg_subtrans until it ends. Below that, with room for the few a batch cannot avoid.
 */
export const maxKeptSavepoints = 48;

/** One item's answer: its single route's value, or the business error its single route would have raised. */
export type ItemOutcome<T> = { ok: true; value: T } | { ok: false; error: BatonError };

/**
 * Applies the items of a batch in order, each all or nothing by itself (docs/design/0015-batches.md): an item
 * that raises a BatonError answers it and leaves nothing behind, and its neighbours go on. Any
 * other failure is a bug and fails the whole transaction.
 *
 * "Leaves nothing behind" costs a savepoint only for items that can fail after they wrote
 * (`mayFailAfterWriting`); every other item checks everything before its first write. Why not a
 * savepoint each: a savepoint that writes is a PostgreSQL subtransaction, and a transaction with
 * more than 64 of them overflows every backend's subtransaction cache, after which each snapshot
 * of every session on the server consults pg_subtrans: a batch of 100 would slow the whole
 * database, not just itself. The items that can (a complete publishing its result to a
 * mailbox) are rare; a batch of more than maxKeptSavepoints of them overflows the cache for the
 * few milliseconds its transaction lasts.
 */
export async function eachItem<I, T>(ctx: OpContext, items: readonly I[], mayFailAfterWriting: (item: I) => boolean, run: (item: I) => Promise<T>): Promise<ItemOutcome<T>[]> {
  const outcomes: ItemOutcome<T>[] = [];
  for (const item of items) {
    if (mayFailAfterWriting(item)) {
      let outcome: ItemOutcome<T> | undefined;
      await ctx.tx.savepoints.attempt(async () => {
        outcome = await settle(run(item));
        return outcome.ok;
      });
      outcomes.push(outcome!);
    } else {
      outcomes.push(await settle(run(item)));
    }
  }
  return outcomes;
}

async function settle<T>(running: Promise<T>): Promise<ItemOutcome<T>> {
  try {
    return { ok: true, value: await running };
  } catch (error) {
    if (!(error instanceof BatonError)) throw error;
    return { ok: false, error };
  }
}
