/**
 * client.watch(): the filtered journal as an async iterator of events, long-polling
 * GET /watch (docs/runtime.md, "Watching events"). Delivery is at least once, in eventId order:
 * the iterator resumes from its cursor after errors (backing off) and, given the cursor a
 * previous run saved, across restarts, and it drops any event it already handed out.
 */

import type { CallOptions } from './contract';
import type { RuntimeClock, RuntimeRandom } from './clock';
import { isRetryable } from './errors';
import { backoffDelayMs, type RetryPolicy } from './retry';

/** An event as GET /events and GET /watch return it (docs/events.md). */
export interface WatchEvent {
  eventId: string;
  type: string;
  aggregate: { type: string; id: string };
  scopeId: string | null;
  occurredAt: string;
  data: Record<string, unknown>;
}

export interface WatchPageReply {
  items: WatchEvent[];
  nextCursor: string;
}

/** One GET /watch request; the query docs/api.md, "Watch", describes. */
export interface WatchQuery {
  cursor?: string;
  /** Event types; `prefix.*` matches every type starting with `prefix.`. Sent comma-separated. */
  types?: string | readonly string[];
  /** `type` or `type:id`. */
  aggregate?: string;
  /** A scope and the group gate scopes below it. */
  scopeId?: string;
  /** 1 to 500 (default 100). */
  limit?: number;
  /** 0 to 30 (default 0). */
  waitSeconds?: number;
}

export interface WatchOptions extends Omit<WatchQuery, 'waitSeconds'> {
  /** Start after this position (a cursor saved from `cursor` or onCursor); absent: the journal's start. */
  cursor?: string;
  /** How long each request waits on the server for a match. Default 30 (the server's cap). */
  waitSeconds?: number;
  /** Ends the iteration (it returns; it does not throw), also in the middle of a wait or a backoff. */
  signal?: AbortSignal;
  /**
   * Called whenever the cursor moves: after each event handed out, and after a page whose last
   * events did not match. Save it and pass it back as `cursor` to resume after a restart.
   */
  onCursor?: (cursor: string) => void;
}

/** The iterator client.watch returns; `cursor` is where a new watch would resume (onCursor's last value). */
export interface EventWatch extends AsyncIterable<WatchEvent> {
  readonly cursor: string | undefined;
}

export interface WatchDeps {
  /** One page, already retried by the client's policy; the watch retries beyond it. */
  page(query: WatchQuery, options: CallOptions): Promise<WatchPageReply>;
  clock: RuntimeClock;
  random: RuntimeRandom;
  /** Backoff between failed pages; attempts and elapsed time are not bounded: a watch outlives outages. */
  policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs'>;
}

export const defaultWatchWaitSeconds = 30;

/** Whether eventId `a` is after `b`: digit strings without leading zeros compare by length, then text. */
export function eventIdAfter(a: string, b: string): boolean {
  return a.length !== b.length ? a.length > b.length : a > b;
}

export function createWatch(deps: WatchDeps, options: WatchOptions): EventWatch {
  let cursor = options.cursor;
  /** The last eventId handed out: anything not after it is a duplicate (eventIds increase along the journal). */
  let lastYielded: string | undefined = options.cursor;
  const { signal } = options;
  const moveTo = (next: string): void => {
    if (cursor === next) return;
    cursor = next;
    options.onCursor?.(next);
  };

  async function* events(): AsyncGenerator<WatchEvent> {
    let failures = 0;
    while (!signal?.aborted) {
      let page: WatchPageReply;
      try {
        page = await deps.page(
          {
            cursor, types: options.types, aggregate: options.aggregate, scopeId: options.scopeId, limit: options.limit,
            waitSeconds: options.waitSeconds ?? defaultWatchWaitSeconds,
          },
          signal === undefined ? {} : { signal },
        );
        failures = 0;
      } catch (error) {
        if (signal?.aborted) return;
        // A refused request (a bad filter, a revoked key) will not get better by asking again.
        if (!isRetryable(error)) throw error;
        failures++;
        try {
          await deps.clock.sleep(backoffDelayMs(failures, { ...deps.policy, maxAttempts: Infinity, maxElapsedMs: Infinity }, deps.random), signal);
        } catch (sleepError) {
          if (signal?.aborted) return;
          throw sleepError;
        }
        continue;
      }
      for (const event of page.items) {
        if (lastYielded !== undefined && !eventIdAfter(event.eventId, lastYielded)) continue;
        lastYielded = event.eventId;
        moveTo(event.eventId);
        yield event;
        if (signal?.aborted) return;
      }
      // Past the page's last match: the events after it were examined and did not match.
      moveTo(page.nextCursor);
    }
  }

  return {
    get cursor() {
      return cursor;
    },
    [Symbol.asyncIterator]: () => events(),
  };
}
