import { readWatchPage, watchTopicsOf, type WatchFilter, type WatchPage } from '@baton/core';
import type { AppDeps } from './deps';
import { longPollOn } from './long-poll';

export interface WatchRequest {
  spaceId: string;
  filter: WatchFilter;
  cursor: string | undefined;
  limit: number;
  waitMs: number;
  /** Aborts when the client goes away: the watch stops holding anything. */
  signal: AbortSignal;
}

/**
 * GET /watch's long poll: reads the filtered journal until a page holds a match, the wait ends,
 * the server drains or the client leaves. Each read starts where the previous one stopped, so a
 * request examines every journal event once; the page answered carries the last position
 * examined. It parks only on the topics of what its filter can match (watch-topics.ts); the
 * subtree of a scopeId is unknown before the first read, so its root's topic guards that read
 * and a read that finds more scopes arms theirs (longPollOn repeats it at once).
 *
 * On PostgreSQL a woken watch re-reads on the horizon schedule (horizon-rechecks.ts); memory
 * and PGlite commit one transaction at a time, so what committed is visible there at once.
 */
export function watchPoll(deps: AppDeps, request: WatchRequest): Promise<WatchPage> {
  const { spaceId, filter, limit } = request;
  let cursor = request.cursor;
  // A hold reads several times; the page answered is the last read's, but the client's cursor
  // was judged by the first: a truncation found by any read stays on the answer (docs/design/0017-retention.md).
  let truncated = false;
  const read = async (): Promise<WatchPage> => {
    const page = await deps.store.read((tx) => readWatchPage(tx, spaceId, cursor, filter, limit));
    cursor = page.nextCursor;
    truncated ||= page.truncated;
    return { ...page, truncated };
  };
  const firstTopics = watchTopicsOf(spaceId, filter, filter.scopeId === null ? null : new Set([filter.scopeId]));
  return longPollOn(
    deps,
    request.waitMs,
    read,
    (page) => page.items.length > 0,
    (page) => ({ topics: watchTopicsOf(spaceId, filter, page.subtree), atMs: null }),
    firstTopics,
    { signal: request.signal, horizonRechecks: deps.store.kind === 'postgres' },
  );
}
