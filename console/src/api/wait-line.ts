import { unwrap, type Api } from './client';
import type { AllowanceWaiter } from './types';

/**
 * The API lists no allowance's waiters (only GET /allowance-waiters/{id}), but the journal names
 * each one: `allowance.waiter_queued` when it joins the line, and granted, expired or cancelled
 * when it leaves. Following those events (GET /watch, filtered to the allowance) gives the ids in
 * line; each is then read from the API, which has the last word on its state. A waiter lives at
 * most an hour (ttlSeconds, at most 3600), far less than the journal is kept, so none still in
 * line was queued before the journal's oldest event.
 */
const waiterEvents = ['allowance.waiter_queued', 'allowance.waiter_granted', 'allowance.waiter_expired', 'allowance.waiter_cancelled'].join(',');
const queued = 'allowance.waiter_queued';
const pageSize = 500;
/** Pages read in one refresh before the rest is left to the next: a huge journal catches up over a few. */
const pagesPerRefresh = 40;
/** Waiters read from the API in one refresh (the front of the line). */
export const waitersShown = 50;

export interface WaitLine {
  /** WAITING waiters, front of the line first. */
  waiters: AllowanceWaiter[];
  /** Ids the journal shows in line; more than waiters.length when only the front was read. */
  inLine: number;
  /** false while the journal has not been read to its end yet. */
  caughtUp: boolean;
  /** Retention deleted events the line was read from: a waiter may be missing. */
  truncated: boolean;
}

/** Follows one allowance's line through the journal; each `read` continues from where the last stopped. */
export class WaitLineFollower {
  private cursor: string | undefined;
  private readonly inLine = new Map<string, string>(); // waiter id -> queued event id (journal order)
  private truncated = false;

  constructor(
    private readonly api: Api,
    private readonly spaceId: string,
    private readonly allowanceId: string,
  ) {}

  private reading: Promise<WaitLine> | undefined;

  /** One read at a time: two following the journal from the same cursor could replay a join after its leave. */
  read(): Promise<WaitLine> {
    this.reading ??= this.readOnce().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private async readOnce(): Promise<WaitLine> {
    const caughtUp = await this.follow();
    const front = [...this.inLine.keys()].slice(0, waitersShown);
    const read = await Promise.all(
      front.map((id) => this.api.GET('/v1/spaces/{spaceId}/allowance-waiters/{id}', { params: { path: { spaceId: this.spaceId, id } } }).then(unwrap)),
    );
    // The API's state wins over the journal's (an expiry the journal has not recorded yet).
    for (const w of read) if (w.state !== 'WAITING') this.inLine.delete(w.id);
    const waiters = read.filter((w) => w.state === 'WAITING');
    return { waiters, inLine: this.inLine.size, caughtUp, truncated: this.truncated };
  }

  private async follow(): Promise<boolean> {
    for (let pages = 0; pages < pagesPerRefresh; pages++) {
      const query = { limit: pageSize, waitSeconds: 0, aggregate: `allowance:${this.allowanceId}`, types: waiterEvents, ...(this.cursor ? { cursor: this.cursor } : {}) };
      const page = await this.api.GET('/v1/spaces/{spaceId}/watch', { params: { path: { spaceId: this.spaceId }, query } }).then(unwrap);
      this.truncated ||= page.truncated === true;
      for (const event of page.items) {
        const waiterId = event.data['waiterId'];
        if (typeof waiterId !== 'string') continue;
        if (event.type === queued) this.inLine.set(waiterId, event.eventId);
        else this.inLine.delete(waiterId);
      }
      // A read that examined nothing stands at the journal's end.
      const atEnd = page.nextCursor === (this.cursor ?? '0');
      this.cursor = page.nextCursor;
      if (atEnd) return true;
    }
    return false;
  }
}
