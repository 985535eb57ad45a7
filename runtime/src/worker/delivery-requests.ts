import type { RuntimeClock } from '../clock';
import type { Admitted, ApiErrorShape, BatchItemReply, CallOptions, WorkerApi } from '../contract';
import { Flusher, withdrawn, type FlusherOptions, type ItemResult } from './flusher';

/**
 * How the worker's requests reach the server: batched (admit-batch up to the free slots, and
 * completes, nacks and renewals gathered by flushers into batch requests) or one single-route
 * call per delivery and step. Either way each delivery gets its own answer, as an ItemResult.
 */

type AdmitBody = Parameters<WorkerApi['admit']>[0];
export type CompleteItem = Parameters<WorkerApi['complete']>[1] & { messageId: string };
export type NackItem = Parameters<WorkerApi['nack']>[1] & { messageId: string };
export type RenewItem = Parameters<WorkerApi['renew']>[1] & { messageId: string };
type CompleteReply = Awaited<ReturnType<WorkerApi['complete']>>;
type NackReply = Awaited<ReturnType<WorkerApi['nack']>>;
type RenewReply = Awaited<ReturnType<WorkerApi['renew']>>;

export interface DeliveryRequests {
  /** One admit for as many deliveries as there are free slots (one with batching off). */
  admit(body: AdmitBody, freeSlots: number, options: CallOptions): Promise<Admitted[]>;
  /** `stillWanted` is asked when the request leaves: a complete whose lease ran out meanwhile is `withdrawn`, never sent. */
  complete(item: CompleteItem, stillWanted: () => boolean): Promise<ItemResult<CompleteReply>>;
  nack(item: NackItem, stillWanted: () => boolean): Promise<ItemResult<NackReply>>;
  /**
   * `signal` reaches a single-route renew only: a batch carries other deliveries' renewals too,
   * so a delivery that no longer wants its renewal ignores the answer instead.
   */
  renew(item: RenewItem, signal: AbortSignal): Promise<ItemResult<RenewReply>>;
}

/** `batching` null: the single routes. */
export function deliveryRequests(client: WorkerApi, clock: RuntimeClock, batching: FlusherOptions | null): DeliveryRequests {
  return batching === null ? singleRequests(client) : batchedRequests(client, clock, batching);
}

function singleRequests(client: WorkerApi): DeliveryRequests {
  const unlessWithdrawn = <T>(stillWanted: () => boolean, send: () => Promise<T>): Promise<ItemResult<T>> => (stillWanted() ? resultOf(send()) : Promise.resolve(withdrawn));
  return {
    admit: async (body, _freeSlots, options) => {
      const one = await client.admit(body, options);
      return one === null ? [] : [one];
    },
    complete: ({ messageId, ...body }, stillWanted) => unlessWithdrawn(stillWanted, () => client.complete(messageId, body)),
    nack: ({ messageId, ...body }, stillWanted) => unlessWithdrawn(stillWanted, () => client.nack(messageId, body)),
    renew: ({ messageId, ...body }, signal) => resultOf(client.renew(messageId, body, { signal })),
  };
}

function batchedRequests(client: WorkerApi, clock: RuntimeClock, batching: FlusherOptions): DeliveryRequests {
  const completes = new Flusher<CompleteItem, CompleteReply>(async (items) => resultsOf(await client.completeBatch({ items })), clock, batching);
  const nacks = new Flusher<NackItem, NackReply>(async (items) => resultsOf(await client.nackBatch({ items })), clock, batching);
  const renewals = new Flusher<RenewItem, RenewReply>(async (items) => resultsOf(await client.renewBatch({ items })), clock, batching);
  return {
    // Never more than the free slots: every admitted delivery is leased at once, handler or not.
    admit: (body, freeSlots, options) => client.admitBatch({ ...body, maxTasks: Math.max(1, Math.min(freeSlots, batching.maxItems)) }, options),
    complete: (item, stillWanted) => completes.add(item, stillWanted),
    nack: (item, stillWanted) => nacks.add(item, stillWanted),
    renew: (item) => renewals.add(item),
  };
}

/** A single route's call as a flush answers it: its reply, or the error it threw. */
async function resultOf<T>(call: Promise<T>): Promise<ItemResult<T>> {
  try {
    return { ok: true, value: await call };
  } catch (error) {
    return { ok: false, error };
  }
}

/** A batch reply's items as results: 200 is the single route's reply, anything else its error envelope. */
function resultsOf<T>(replies: BatchItemReply<T>[]): ItemResult<T>[] {
  return replies.map((reply) => {
    if (reply.status === 200) return { ok: true, value: reply.body as T };
    const { error } = reply.body as { error: Omit<ApiErrorShape, 'status'> };
    return { ok: false, error: { ...error, status: reply.status } satisfies ApiErrorShape };
  });
}
