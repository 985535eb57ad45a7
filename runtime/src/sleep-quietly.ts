import type { RuntimeClock } from './clock';

/**
 * Sleeps on the injected clock, treating an abort as "wake up now" rather than as a failure: the
 * runtime's loops (admission, renewal, expiry watch, drain) re-check their own state after every
 * sleep, so the abort needs no handling of its own.
 */
export async function sleepQuietly(clock: RuntimeClock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return;
  try {
    await clock.sleep(Math.max(0, ms), signal);
  } catch {
    // Aborted: the caller's loop condition decides what happens next.
  }
}
