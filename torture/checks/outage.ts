import type { Call, History } from '../history';

/** The orchestrator's note of the outage phase (run.ts): when PostgreSQL was down, in wall-clock ms. */
export interface OutageWindow {
  fromMs: number;
  toMs: number;
}

export const outageNote = 'pg-outage';

export function outageWindows(history: History): OutageWindow[] {
  return history.notes.filter((n) => n.what === outageNote).map((n) => ({ fromMs: n.data.fromMs as number, toMs: n.data.toMs as number }));
}

/**
 * docs/design/0004-error-codes.md: a store that cannot be reached is 503 UNAVAILABLE with Retry-After (whole
 * seconds, at least 1), and nothing else of the server is a 5xx. Violations: any 5xx that is not
 * that (a 500 means an error of an outage was not told from a bug, and the client had no
 * Retry-After), and an outage phase in which no client saw a 503, for then the check proved
 * nothing. That nothing acknowledged is lost across the outage is the other checks' business.
 */
export function checkOutage(history: History): string[] {
  const out: string[] = [];
  for (const call of history.calls) {
    if (call.status === undefined || call.status < 500) continue;
    const problem = unavailableProblem(call);
    if (problem) out.push(`${call.method} ${call.path} by ${call.proc} at ${new Date(call.invokedAtMs).toISOString()} answered ${call.status}: ${problem}`);
  }
  for (const window of outageWindows(history)) {
    if (unavailableWithin(history, window) === 0) out.push(`no client saw a 503 while PostgreSQL was down (${new Date(window.fromMs).toISOString()} to ${new Date(window.toMs).toISOString()})`);
  }
  return out;
}

/** Calls sent and answered 503 while PostgreSQL was down, in every outage: what the run reports. */
export function unavailableDuringOutages(history: History): number {
  return outageWindows(history).reduce((n, window) => n + unavailableWithin(history, window), 0);
}

const unavailableWithin = (history: History, { fromMs, toMs }: OutageWindow): number =>
  history.calls.filter((c) => c.status === 503 && c.invokedAtMs >= fromMs && c.endedAtMs! <= toMs).length;

function unavailableProblem(call: Call): string | undefined {
  const code = call.reply?.error?.code;
  if (call.status !== 503 || code !== 'UNAVAILABLE') return `code ${code ?? 'none'}, not 503 UNAVAILABLE`;
  if (!/^\d+$/.test(call.retryAfter ?? '') || Number(call.retryAfter) < 1) return `Retry-After ${call.retryAfter ?? 'missing'}, not whole seconds of at least 1`;
  return undefined;
}
