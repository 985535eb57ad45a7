/**
 * The calendar windows of docs/design/0016-limits-and-retry-after.md, on the service clock (UTC): request rates count per
 * calendar minute, operations per calendar month. Months are named 'YYYY-MM'.
 */
const minuteMs = 60_000;

/** The calendar minute `nowMs` falls in, as minutes since the epoch. */
export function minuteOf(nowMs: number): number {
  return Math.floor(nowMs / minuteMs);
}

/** When the next calendar minute starts: a rate limit's Retry-After runs to it. */
export function nextMinuteMs(nowMs: number): number {
  return (minuteOf(nowMs) + 1) * minuteMs;
}

/** The UTC calendar month `nowMs` falls in, 'YYYY-MM'. */
export function monthOf(nowMs: number): string {
  return new Date(nowMs).toISOString().slice(0, 7);
}

/** When the next UTC calendar month starts: OPERATIONS_EXHAUSTED's Retry-After runs to it. */
export function nextMonthMs(nowMs: number): number {
  const at = new Date(nowMs);
  return Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1);
}
