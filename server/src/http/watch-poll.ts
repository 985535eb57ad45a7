import { setMaxListeners } from 'node:events';
import { readWatchPage, watchTopicsOf, type WatchFilter, type WatchPage } from '@baton/core';
import type { AppDeps } from './deps';
import { maxLongPollMs } from './long-poll';

/**
 * Re-reads after a wake that found nothing new, in real milliseconds. On PostgreSQL a commit's
 * notification can arrive before its event passes the journal's horizon (docs/event-journal.md,
 * "Long polls must re-check"); the horizon moves in real time, whatever the server's clock,
 * and usually within a millisecond or two, so a few re-reads spaced out to about 1.3 s in all
 * catch it (PostgreSQL only: the other stores commit one transaction at a time). After them the watch parks on its topics alone: an event still held back by an old
 * transaction is answered by the next wake, or by the final read when the wait ends.
 */
export const watchRecheckDelaysMs: readonly number[] = [5, 10, 20, 40, 80, 160, 320, 640];

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
 * examined. It parks only on the topics of what its filter can match (watch-topics.ts), each
 * armed before the read it guards (no lost wake-up, as longPollOn).
 */
export async function watchPoll(deps: AppDeps, request: WatchRequest): Promise<WatchPage> {
  const { spaceId, filter, limit, signal } = request;
  const deadline = deps.clock.now() + Math.min(request.waitMs, maxLongPollMs);
  let cursor = request.cursor;
  const read = async (): Promise<WatchPage> => {
    const page = await deps.store.read((tx) => readWatchPage(tx, spaceId, cursor, filter, limit));
    cursor = page.nextCursor;
    return page;
  };
  // The subtree is unknown before the first read: its root's topic guards it, and a read that finds more re-arms.
  const armed = new Set(watchTopicsOf(spaceId, filter, filter.scopeId === null ? null : new Set([filter.scopeId])));
  /** Index of the next re-check delay; past the end: no re-check pending, wait for a topic. */
  let recheck = watchRecheckDelaysMs.length;
  for (;;) {
    if (signal.aborted) return { items: [], nextCursor: cursor ?? '0', subtree: null };
    const remaining = deadline - deps.clock.now();
    if (remaining <= 0 || deps.drain.draining) return read();
    const disarm = new AbortController();
    setMaxListeners(armed.size + 2, disarm.signal);
    const onStop = (): void => disarm.abort();
    deps.drain.signal.addEventListener('abort', onStop, { once: true });
    signal.addEventListener('abort', onStop, { once: true });
    const woken = Promise.race([...armed].map((topic) => deps.notifier.wait(topic, remaining, disarm.signal)));
    try {
      const page = await read();
      if (page.items.length > 0) return page;
      const unarmed = watchTopicsOf(spaceId, filter, page.subtree).filter((topic) => !armed.has(topic));
      for (const topic of unarmed) armed.add(topic);
      if (unarmed.length > 0) continue;
      const delayMs = watchRecheckDelaysMs[recheck];
      const unpark = deps.telemetry.pollParked();
      try {
        const notified = await Promise.race([woken, ...(delayMs === undefined ? [] : [realSleep(delayMs, disarm.signal).then(() => 'recheck' as const)])]);
        // Memory and PGlite commit one transaction at a time: a notified event is visible at once there.
        if (notified === true) recheck = deps.store.kind === 'postgres' ? 0 : watchRecheckDelaysMs.length;
        else if (notified === 'recheck') recheck++;
      } finally {
        unpark();
      }
    } finally {
      // Releases the armed waits and the re-check timer: nothing is left behind when the request ends.
      disarm.abort();
      deps.drain.signal.removeEventListener('abort', onStop);
      signal.removeEventListener('abort', onStop);
    }
  }
}

function realSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });
}
