/**
 * What the limited tenant's agents were told, attempt by attempt (no client retries: every
 * attempt is one request the server may have counted), and the invariants of docs/design/0016-limits-and-retry-after.md that
 * follow from it alone:
 * - a recovery call is never refused by a rate limit while fewer than the limit's requests can
 *   have been counted in its minute;
 * - once a Free organization's month is used, no new work sent more than one second later succeeds
 *   (the buffered second), unless a restarted server has not yet synced.
 */
export type AttemptKind = 'work' | 'read' | 'recovery';

export interface Attempt {
  agent: string;
  kind: AttemptKind;
  what: string;
  sentAtMs: number;
  /** Unset when the reply never came (lost, timed out, refused): the server may have counted it. */
  repliedAtMs?: number;
  statusCode?: number;
  code?: string;
  replayed?: boolean;
}

export interface LimitFacts {
  /** The space's requestsPerMinute (below the organization's, so it binds first). */
  perMinute: number;
  /** Longest a request can take to reach the server, duplicates included (network.ts). */
  maxDeliveryMs: number;
  /** Each attempt may reach the server twice when the run duplicates requests. */
  copiesPerAttempt: 1 | 2;
  /** When each restarted server began taking requests (a restart forgets what was counted in memory); the first server's start is not here. */
  serverStartsMs: readonly number[];
  /** How long after a server starts its first sync has surely run (one tick, with margin). */
  syncedWithinMs: number;
  /** Operations left in the Free organization's month when the run began. */
  operationsLeft: number;
}

const rateCodes = new Set(['RATE_LIMITED', 'SERVICE_RATE_LIMITED']);
const minuteMs = 60_000;
/** docs/design/0016-limits-and-retry-after.md: Free's hard stop may be passed by the operations of one buffered second. */
const bufferedMs = 1_000;

export function checkLimits(attempts: readonly Attempt[], facts: LimitFacts): string[] {
  return [...checkRecoveryReserve(attempts, facts), ...checkOperationsStop(attempts, facts)];
}

/**
 * A refused recovery call: every attempt that may have been counted in its minute (sent from the
 * minute's start less the longest delivery, until the refusal came back, not itself refused by
 * the rate) is an upper bound on the server's count. Below the limit, the refusal was wrong.
 */
function checkRecoveryReserve(attempts: readonly Attempt[], facts: LimitFacts): string[] {
  const violations: string[] = [];
  for (const refused of attempts) {
    if (refused.kind !== 'recovery' || !rateCodes.has(refused.code ?? '')) continue;
    const fromMs = Math.floor(refused.sentAtMs / minuteMs) * minuteMs - facts.maxDeliveryMs;
    const counted = attempts.filter((a) => a !== refused && a.sentAtMs >= fromMs && a.sentAtMs <= refused.repliedAtMs! && !rateCodes.has(a.code ?? '')).length * facts.copiesPerAttempt;
    if (counted < facts.perMinute) {
      violations.push(`limits: ${refused.agent}'s recovery call ${refused.what} at ${refused.sentAtMs} was refused ${refused.code} with at most ${counted} of ${facts.perMinute} requests counted in its minute`);
    }
  }
  return violations;
}

/**
 * New work that succeeded though sent a buffered second after the month's operations were used,
 * by a server that had synced since it started. "Used" is when the acknowledged operations alone
 * reached what was left: operations whose replies were lost may have counted too, so the server
 * knew no later than that.
 */
function checkOperationsStop(attempts: readonly Attempt[], facts: LimitFacts): string[] {
  const operations = attempts.filter((a) => a.kind !== 'read' && a.agent !== 'operator' && succeeded(a)).sort((a, b) => a.repliedAtMs! - b.repliedAtMs!);
  const usedUp = operations[facts.operationsLeft - 1];
  if (!usedUp) return [];
  const usedAtMs = usedUp.repliedAtMs!;
  const restartedBefore = (atMs: number): number => Math.max(Number.NEGATIVE_INFINITY, ...facts.serverStartsMs.filter((s) => s <= atMs));
  // The answering request reached the server before its reply came back, not when it was sent:
  // one sent while the server was down arrives at the next process, which may not have synced.
  const surelySynced = (a: Attempt): boolean => a.sentAtMs >= restartedBefore(a.repliedAtMs!) + facts.syncedWithinMs;
  return attempts
    .filter((a) => a.kind === 'work' && succeeded(a))
    .filter((a) => a.sentAtMs >= usedAtMs + bufferedMs && surelySynced(a))
    .map((a) => `limits: ${a.agent}'s ${a.what} sent at ${a.sentAtMs} succeeded (${a.statusCode}) though the month's last operation was acknowledged at ${usedAtMs}`);
}

/** An operation that ran: a 2xx other than an empty claim's 204, and not a replay. */
function succeeded(a: Attempt): boolean {
  return a.statusCode !== undefined && a.statusCode >= 200 && a.statusCode < 300 && a.statusCode !== 204 && !a.replayed;
}
