import type { Random } from '@baton/core';

/**
 * When a failed delivery is tried again: exponential backoff with full jitter, 5 s doubling
 * to a cap of 1 h (attempt n waits a uniform random time in [0, min(1 h, 5 s * 2^(n-1))]), so
 * a receiver that is down is not hammered by every destination at once. A destination failing
 * continuously for pauseAfterMs (24 h by default) is PAUSED: with the cap reached after about
 * ten attempts, that is some 30 to 40 more attempts, about one every half hour on average.
 */
export interface RetrySchedule {
  baseDelayMs: number;
  maxDelayMs: number;
  /** Failing continuously (since the first failure of the current run) this long pauses the destination. */
  pauseAfterMs: number;
}

export const defaultRetrySchedule: RetrySchedule = { baseDelayMs: 5_000, maxDelayMs: 3_600_000, pauseAfterMs: 24 * 3_600_000 };

/** The wait after the `failures`-th consecutive failure (1 = the first). */
export function retryDelayMs(schedule: RetrySchedule, failures: number, random: Random): number {
  const ceiling = Math.min(schedule.maxDelayMs, schedule.baseDelayMs * 2 ** Math.min(failures - 1, 40));
  const [a, b, c, d] = random.bytes(4);
  const fraction = (((a! << 24) | (b! << 16) | (c! << 8) | d!) >>> 0) / 2 ** 32;
  return Math.floor(fraction * (ceiling + 1));
}
