/**
 * The request rate, sampled while the overview polls. GET /usage gives only a count, the
 * organization's requests in this calendar minute; two readings some seconds apart give the rate
 * between them. When the count fell, a new minute began between the readings: the new count
 * is what came since, and the old minute's last requests are lost (the rate is a lower bound).
 * The history lives as long as the tab, per organization, so leaving the overview and coming
 * back keeps it.
 */
export interface RatePoint {
  atMs: number;
  requestsPerMinute: number;
}

interface Reading {
  atMs: number;
  requestsThisMinute: number;
}

/** Five minutes of points at the overview's 5-second refresh. */
const pointsKept = 60;
/** Closer readings than this (a refresh right after another) say too little about a rate. */
const shortestGapMs = 1000;

const histories = new Map<string, { last: Reading | undefined; points: RatePoint[] }>();

export function recordRequestCount(orgId: string, reading: Reading): void {
  const history = histories.get(orgId) ?? { last: undefined, points: [] };
  histories.set(orgId, history);
  const last = history.last;
  if (last && reading.atMs - last.atMs < shortestGapMs) return;
  history.last = reading;
  if (!last) return;
  const gapMs = reading.atMs - last.atMs;
  const requests = reading.requestsThisMinute >= last.requestsThisMinute ? reading.requestsThisMinute - last.requestsThisMinute : reading.requestsThisMinute;
  history.points.push({ atMs: reading.atMs, requestsPerMinute: (requests / gapMs) * 60_000 });
  if (history.points.length > pointsKept) history.points.splice(0, history.points.length - pointsKept);
}

export function requestRateHistory(orgId: string): RatePoint[] {
  return [...(histories.get(orgId)?.points ?? [])];
}
