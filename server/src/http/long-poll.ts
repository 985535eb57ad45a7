import { setMaxListeners } from 'node:events';
import { isReadyTopic } from '@baton/core';
import type { AppDeps } from './deps';
import { HorizonRechecks } from '../notify/horizon-rechecks';

/** The effective cap of a long poll: longer waits are shortened to it (docs/api.md "Fixed bounds"). */
export const maxLongPollMs = 30_000;

/** What a long poll may add to topics and the clock. */
export interface LongPollOptions {
  /** Aborts when the client goes away: the poll answers with one last read and holds nothing. */
  signal?: AbortSignal;
  /**
   * Reads the journal through its horizon on PostgreSQL: after a wake, re-read on the schedule
   * of horizon-rechecks.ts until done, since the woken-for event may not be visible yet.
   */
  horizonRechecks?: boolean;
}

/** What could change a read's answer: commits on `topics`, or the clock reaching `atMs`. */
export interface Wake {
  topics: readonly string[];
  atMs: number | null;
}

/**
 * Reads until `done` holds, `waitMs` (capped) pass on the injected clock, or the server starts
 * draining, and returns the last read. Each wake-up is armed before its read, so a commit that
 * lands between the read and the wait still wakes it: no lost wake-up. Callers re-read state
 * after every wake, since a topic only says that something about it committed.
 */
export async function longPoll<T>(deps: AppDeps, topic: string, waitMs: number, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  return longPollOn(deps, waitMs, read, done, () => ({ topics: [topic], atMs: null }), [topic]);
}

/**
 * longPoll for reads that learn what to wait on (admission learns which resources are short):
 * `wakeOf` names the topics and the time that could change an unfinished read. A read naming a
 * topic not yet armed is repeated at once with it armed, so a commit on that topic between the
 * read and the arming still counts; topics only accumulate, so this ends.
 *
 * A ready topic (readyTopicOf) is notified for one poll per delivery made READY, not for all:
 * a poll it woke that then claims passes one wake on to the next poll parked there, so when
 * several deliveries became READY (or the poll took an older one), parked polls keep waking one
 * after another until one finds nothing. A woken poll that claims nothing stops the chain.
 */
export async function longPollOn<T>(
  deps: AppDeps,
  waitMs: number,
  read: () => Promise<T>,
  done: (value: T) => boolean,
  wakeOf: (value: T) => Wake,
  firstTopics: readonly string[],
  options: LongPollOptions = {},
): Promise<T> {
  const { signal } = options;
  const deadline = deps.clock.now() + Math.min(waitMs, maxLongPollMs);
  const armed = new Set(firstTopics);
  const rechecks = options.horizonRechecks ? new HorizonRechecks() : undefined;
  /** The counted wake (readyTopicOf) this poll took, if any: passed on when the poll ends with a claim. */
  let wokenBy: string | undefined;
  const answer = (value: T): T => {
    if (wokenBy !== undefined && done(value)) deps.notifier.notify(wokenBy, 1);
    return value;
  };
  for (;;) {
    const remaining = deadline - deps.clock.now();
    if (remaining <= 0 || deps.drain.draining || signal?.aborted) return answer(await read());
    const disarm = new AbortController();
    // One abort listener per armed topic (a recv over gate scopes arms two per scope): not a leak.
    setMaxListeners(armed.size + 2, disarm.signal);
    const onStop = (): void => disarm.abort();
    deps.drain.signal.addEventListener('abort', onStop, { once: true });
    signal?.addEventListener('abort', onStop, { once: true });
    const woken = Promise.race(
      [...armed].map(async (topic) => {
        const notified = await deps.notifier.wait(topic, remaining, disarm.signal);
        if (notified && isReadyTopic(topic)) wokenBy = topic;
        return notified;
      }),
    );
    try {
      const value = await read();
      if (done(value)) return answer(value);
      const wake = wakeOf(value);
      const unarmed = wake.topics.filter((topic) => !armed.has(topic));
      for (const topic of unarmed) armed.add(topic);
      if (unarmed.length > 0) continue;
      // Counted while parked only (metrics: baton_long_polls_parked), not while it reads.
      const recheckMs = rechecks?.delayMs();
      const unpark = deps.telemetry.pollParked();
      try {
        const outcome = await Promise.race([
          woken,
          ...(wake.atMs === null ? [] : [sleepUntil(deps, wake.atMs, disarm.signal).then(() => false)]),
          ...(recheckMs === undefined ? [] : [realSleep(recheckMs, disarm.signal).then(() => 'recheck' as const)]),
        ]);
        if (outcome === true) rechecks?.notified();
        else if (outcome === 'recheck') rechecks?.rechecked();
      } finally {
        unpark();
      }
    } finally {
      // Releases the armed waits and timers when the read answered or failed first: nothing is left behind.
      disarm.abort();
      deps.drain.signal.removeEventListener('abort', onStop);
      signal?.removeEventListener('abort', onStop);
    }
  }
}

function sleepUntil(deps: AppDeps, atMs: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    // Already due (the clock moved while the read ran): a manual clock fires a 0 ms timer only
    // on its next advance, so answer now rather than schedule.
    if (atMs <= deps.clock.now()) return resolve();
    const cancel = deps.clock.schedule(atMs - deps.clock.now(), resolve);
    signal.addEventListener('abort', () => (cancel(), resolve()), { once: true });
  });
}

/** A re-check's delay: real time, since the horizon moves in real time whatever the server's clock. */
function realSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });
}
