import type { AppDeps } from './deps';

/** The effective cap of a long poll: longer waits are shortened to it (spec, fixed API bounds). */
export const maxLongPollMs = 30_000;

/**
 * Reads until `done` holds, `waitMs` (capped) pass on the injected clock, or the server starts
 * draining, and returns the last read. Each wake-up is armed before its read, so a commit that
 * lands between the read and the wait still wakes it: no lost wake-up. Callers re-read state
 * after every wake, since a topic only says that something about it committed.
 */
export async function longPoll<T>(deps: AppDeps, topic: string, waitMs: number, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = deps.clock.now() + Math.min(waitMs, maxLongPollMs);
  for (;;) {
    const remaining = deadline - deps.clock.now();
    if (remaining <= 0 || deps.drain.draining) return read();
    const disarm = new AbortController();
    const onDrain = (): void => disarm.abort();
    deps.drain.signal.addEventListener('abort', onDrain, { once: true });
    const woken = deps.notifier.wait(topic, remaining, disarm.signal);
    try {
      const value = await read();
      if (done(value)) return value;
      await woken;
    } finally {
      // Releases the armed wait when the read answered or failed first: no timer or waiter is left behind.
      disarm.abort();
      deps.drain.signal.removeEventListener('abort', onDrain);
    }
  }
}
