import { StoreUnavailable, type Store } from '@baton/core';

/** The two log methods the outage writes with (a pino logger has them). */
export interface OutageLog {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

/** What /readyz says while the store cannot be reached. */
export interface OutageState {
  reason: string;
  sinceMs: number;
}

/**
 * Whether the store can be reached, as every transaction and read sees it, and the log of it:
 * one warning when an outage starts, one line when the store answers again, with how long it was
 * out and how many calls it refused. While PostgreSQL was down every request had written a
 * stack trace (200 to 1,400 an outage, issue 27); each is now a 503 and the request's own log line.
 * Times are the wall clock's (`now`): an outage is I/O, not domain time.
 */
export class StoreOutage {
  private current: (OutageState & { refused: number }) | undefined;

  constructor(
    private readonly log: OutageLog | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /** Set while the store cannot be reached: since when, and why (the first failure's reason). */
  get state(): OutageState | undefined {
    return this.current && { reason: this.current.reason, sinceMs: this.current.sinceMs };
  }

  /** A call failed to reach the store: the first of an outage writes the warning. */
  unreachable(error: StoreUnavailable): void {
    if (this.current) {
      this.current.refused += 1;
      return;
    }
    this.current = { reason: error.reason, sinceMs: this.now(), refused: 1 };
    this.log?.warn({ reason: error.reason }, 'store unreachable: calls answer 503 UNAVAILABLE until it answers again');
  }

  /** A call reached the store: the first after an outage writes that it is back. */
  answered(): void {
    if (!this.current) return;
    const { reason, sinceMs, refused } = this.current;
    this.current = undefined;
    this.log?.info({ reason, outageMs: this.now() - sinceMs, refused }, 'store answers again');
  }

  /**
   * `store`, with each transaction, read and maintenance reported here: StoreUnavailable starts
   * (or continues) an outage, a success ends it. Other failures say nothing either way (a
   * business error may come before any statement).
   */
  watch(store: Store): Store {
    const observe = async <T>(pending: Promise<T>): Promise<T> => {
      try {
        const result = await pending;
        this.answered();
        return result;
      } catch (error) {
        if (error instanceof StoreUnavailable) this.unreachable(error);
        throw error;
      }
    };
    return {
      get kind() {
        return store.kind;
      },
      transaction: (work) => observe(store.transaction(work)),
      read: (work) => observe(store.read(work)),
      maintain: () => observe(store.maintain()),
      close: () => store.close(),
    };
  }
}
