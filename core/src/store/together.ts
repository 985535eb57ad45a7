/**
 * Awaits reads sent together and answers their values in order, or throws the first failure,
 * but only once every one has settled. Sent together, the reads of one transaction travel in one
 * round trip on PostgreSQL (pipelining, server/src/store/sql/pg-driver.ts), and run there in the
 * order given, so lock order is the order of the arguments. Waiting for all keeps a statement
 * from still being in flight when the caller gives up on the transaction.
 */
export async function together<T extends readonly unknown[]>(...reads: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(reads);
  for (const read of settled) if (read.status === 'rejected') throw read.reason;
  return settled.map((read) => (read as PromiseFulfilledResult<unknown>).value) as unknown as T;
}
