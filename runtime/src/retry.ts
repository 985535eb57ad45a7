/**
 * Retrying one logical call: exponential backoff with full jitter, Retry-After honoured,
 * bounded in attempts and in total time. Time and chance are injected so tests and the
 * simulator can drive them; the defaults read the system.
 *
 * Kept rather than taken from a library (issue 29, item 8), for two reasons. The sleeps must run
 * on the injected clock: the simulator replays a seed on a virtual clock, and 10 seeds of
 * `npm run sim` make 112 retry sleeps (19.7 s of simulated time) that it schedules itself;
 * p-retry, exponential-backoff and cockatiel sleep on setTimeout with no clock or sleep to pass,
 * so a seed would no longer replay the same. And what is retried goes by Baton's error code, not
 * the status: undici's RetryAgent retries by status and would resend a 429 QUOTA_EXHAUSTED or
 * BACKLOG_FULL, whose replies the server stores under the key, to be answered the same again.
 */

import type { RuntimeClock, RuntimeRandom } from './clock';

export interface RetryPolicy {
  /** Attempts in all, the first included; 1 turns retrying off. */
  maxAttempts: number;
  /** The backoff ceiling of the first retry; it doubles with each retry. */
  baseDelayMs: number;
  /** The backoff ceiling never grows past this. */
  maxDelayMs: number;
  /**
   * No retry starts later than this after the first attempt started: a retry whose sleep
   * would end past it is not made, and the last error is thrown instead.
   */
  maxElapsedMs: number;
}

export const defaultRetryPolicy: RetryPolicy = {
  maxAttempts: 6,
  baseDelayMs: 100,
  maxDelayMs: 10_000,
  // A rate limit's Retry-After runs to the next minute (docs/design/0016-limits-and-retry-after.md): 60 s lets one be waited out.
  maxElapsedMs: 60_000,
};

/**
 * "Full jitter": uniform in [0, min(maxDelayMs, baseDelayMs * 2^(retry-1))). Spreading retries
 * over the whole interval keeps many clients that failed together from retrying together.
 */
export function backoffDelayMs(retry: number, policy: RetryPolicy, random: RuntimeRandom): number {
  const ceilingMs = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(random.next() * ceilingMs);
}

/** `Retry-After` as delta-seconds or an HTTP date (RFC 9110 §10.2.3); null when absent or unreadable. */
export function parseRetryAfterMs(value: string | undefined, nowMs: number): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP date names its month ("Thu, 01 Jan 2026 ..."); without letters, Date.parse would
  // read "-1" as a year.
  if (!/[A-Za-z]/.test(text)) return null;
  const dateMs = Date.parse(text);
  if (Number.isNaN(dateMs)) return null;
  return Math.max(0, dateMs - nowMs);
}

export interface RetryContext {
  policy: RetryPolicy;
  clock: RuntimeClock;
  random: RuntimeRandom;
  /** Stops retrying: the pending sleep ends and the call rejects with `signal.reason`. */
  signal?: AbortSignal;
  isRetryable(error: unknown): boolean;
  /** The wait the server asked for, if any: the next attempt waits at least this long. */
  retryAfterMsOf(error: unknown): number | null;
}

/**
 * Runs `attempt` (numbered from 1) until it resolves, fails with an error `isRetryable`
 * refuses, or the policy's attempts or time run out; then the last error is thrown.
 */
export async function withRetry<T>(attempt: (attemptNumber: number) => Promise<T>, context: RetryContext): Promise<T> {
  const { policy, clock, random, signal } = context;
  const startMs = clock.now();
  for (let attemptNumber = 1; ; attemptNumber++) {
    if (signal?.aborted) throw signal.reason;
    try {
      return await attempt(attemptNumber);
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (attemptNumber >= policy.maxAttempts || !context.isRetryable(error)) throw error;
      // Retry-After is a floor: the server knows when it can take the call again. A longer
      // backoff still wins, so a server that keeps saying "1" does not set the pace alone.
      const delayMs = Math.max(backoffDelayMs(attemptNumber, policy, random), context.retryAfterMsOf(error) ?? 0);
      if (clock.now() + delayMs - startMs > policy.maxElapsedMs) throw error;
      await clock.sleep(delayMs, signal);
    }
  }
}
