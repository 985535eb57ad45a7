import type { RuntimeClock } from '../clock';
import type { ApiErrorShape } from '../contract';

/** One item's answer from a flush: the single route's reply, or the error it (or the whole request) failed with. */
export type ItemResult<T> = { ok: true; value: T } | { ok: false; error: ApiErrorShape | unknown };

/**
 * The answer of an item that was still wanted when added but no longer when its request was
 * formed (the lease it acts on ran out while it waited): it was not sent.
 */
export const withdrawn: ItemResult<never> = { ok: false, error: Symbol.for('baton.flusher.withdrawn') };

/** Sends one flush: the items in order, answered in order (one result per item). */
export type SendItems<I, T> = (items: I[]) => Promise<ItemResult<T>[]>;

export interface FlusherOptions {
  /** Items per request at most (the server takes 1 to 100). */
  maxItems: number;
  /**
   * How long the first item of a flush waits for company. 0 still gathers everything that
   * finishes in the same turn of the event loop (the flush is a 0 ms timer).
   */
  delayMs: number;
  /**
   * Requests in flight at once. While they are all out, items gather for the next, so a busy
   * worker sends full batches and an idle one sends each item at once: group commit, on the
   * client.
   */
  maxInFlight: number;
}

/**
 * Gathers items (completes, nacks, renewals) into batch requests. An item's promise resolves
 * only with the answer to the request that carried it, so nothing is reported done before the
 * server committed it. A request that fails whole (network, 5xx after the client's retries)
 * answers every item it carried with that error.
 */
export class Flusher<I, T> {
  private pending: Pending<I, T>[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly send: SendItems<I, T>,
    private readonly clock: RuntimeClock,
    private readonly options: FlusherOptions,
  ) {
    if (!Number.isInteger(options.maxItems) || options.maxItems < 1) throw new RangeError(`maxItems must be a positive integer, got ${options.maxItems}`);
    if (!Number.isInteger(options.maxInFlight) || options.maxInFlight < 1) throw new RangeError(`maxInFlight must be a positive integer, got ${options.maxInFlight}`);
  }

  /**
   * Queues `item`; `stillWanted`, asked when its request is formed, withdraws it unsent (answer
   * `withdrawn`) when it has become pointless or unsafe meanwhile, as a complete whose lease ran
   * out while it waited for a request: the token is not the worker's to use any more.
   */
  add(item: I, stillWanted: () => boolean = () => true): Promise<ItemResult<T>> {
    return new Promise((answer) => {
      this.pending.push({ item, answer, stillWanted });
      if (this.pending.length >= this.options.maxItems) this.flushNow();
      else this.schedule();
    });
  }

  /** Items waiting for a request. */
  get waiting(): number {
    return this.pending.length;
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.options.maxInFlight) return;
    this.scheduled = true;
    void this.clock.sleep(this.options.delayMs).then(() => {
      this.scheduled = false;
      this.flushNow();
    });
  }

  private flushNow(): void {
    while (this.pending.length > 0 && this.inFlight < this.options.maxInFlight) {
      const batch: Pending<I, T>[] = [];
      while (batch.length < this.options.maxItems && this.pending.length > 0) {
        const next = this.pending.shift()!;
        if (next.stillWanted()) batch.push(next);
        else next.answer(withdrawn);
      }
      if (batch.length === 0) continue;
      this.inFlight += 1;
      void this.deliver(batch);
    }
  }

  private async deliver(batch: Pending<I, T>[]): Promise<void> {
    let results: ItemResult<T>[];
    try {
      results = await this.send(batch.map((b) => b.item));
      if (results.length !== batch.length) throw new Error(`a batch of ${batch.length} was answered with ${results.length} items`);
    } catch (error) {
      results = batch.map(() => ({ ok: false, error }));
    }
    this.inFlight -= 1;
    batch.forEach((b, i) => b.answer(results[i]!));
    // What gathered meanwhile goes at once if it fills a request, else with the next timer.
    if (this.pending.length >= this.options.maxItems) this.flushNow();
    else if (this.pending.length > 0) this.schedule();
  }
}

interface Pending<I, T> {
  item: I;
  answer: (result: ItemResult<T>) => void;
  stillWanted: () => boolean;
}
