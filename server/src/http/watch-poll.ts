import { setMaxListeners } from 'node:events';
import { readWatchPage, watchTopicsOf, type WatchFilter, type WatchPage } from '@baton/core';
import type { AppDeps } from './deps';
import { maxLongPollMs } from './long-poll';

/**
 * Re-reads after a wake that found nothing new, in real milliseconds. On PostgreSQL a commit's
 * notification can arrive before its event passes the journal's horizon (docs/event-journal.md,
 * "Long polls must re-check"); the horizon moves in real time, whatever the server's clock,
 * usually within a millisecond or two, so the first re-reads come quickly. It can also stay
 * behind for seconds while another transaction on the database server is open (a CI run saw
 * it), so once woken the watch keeps re-reading every second (the last delay, repeated) until a
 * page holds a match or the wait ends. A watch never woken re-reads nothing: it parks on its
 * topics alone, and an event committed just before it began but still held back shows at the
 * next wake or when the wait ends (docs/event-journal.md, "The caveat").
 */
export const watchRecheckDelaysMs: readonly number[] = [5, 10, 20, 40, 80, 160, 320, 640, 1_000];

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
  // Memory and PGlite commit one transaction at a time: what committed is visible at once there.
  const horizonLags = deps.store.kind === 'postgres';
  /** Index of the next re-check delay; past the end: no re-check pending, wait for a topic. */
  let recheck = watchRecheckDelaysMs.length;
  /** Woken by a matching commit: keep re-reading every second until its event shows or the wait ends. */
  let wokenOnce = false;
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
        if (notified === true) {
          wokenOnce = horizonLags;
          recheck = horizonLags ? 0 : watchRecheckDelaysMs.length;
        } else if (notified === 'recheck') {
          recheck++;
          // The quick re-reads are over: every second while a woken-for event may still be held back, else none.
          if (recheck === watchRecheckDelaysMs.length && wokenOnce) recheck = watchRecheckDelaysMs.length - 1;
        }
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
