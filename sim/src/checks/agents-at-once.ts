/**
 * The plan's agents at once (docs/design/0016-limits-and-retry-after.md), counted lease by lease (docs/design/0015-batches.md: a batch's every
 * delivery and pool unit): after every step, the organization's live leases, as the store counts
 * them, are within the limit.
 */

export interface LeaseFacts {
  /** The plan's agents at once. */
  agentsAtOnce: number;
  /** When each restarted server began taking requests (not the first server's start: it synced at set-up). */
  serverStartsMs: readonly number[];
  /** When the organization's calls came back, in any order: a restarted server puts it on its sync list at its first call. */
  repliedAtMs: readonly number[];
  /** How long after a restarted server answered the organization its first sync has surely landed (one tick, with margin). */
  syncedAfterReplyMs: number;
  /** How long a lease handed out before that sync can stay live: the longest lease the agents ask for, and the sweep's margin. */
  leaseLivesMs: number;
}

/**
 * A restarted server knows no load until its first sync lands, so it may hand out a plan's worth
 * on top of what is live; those leases are gone within `leaseLivesMs`. A count over the limit is a
 * violation unless it falls in such a window: from a start until the leases that server handed
 * out unsynced have surely ended.
 */
export function checkAgentsAtOnce(liveLeases: number, atMs: number, facts: LeaseFacts): string[] {
  if (liveLeases <= facts.agentsAtOnce) return [];
  const starts = [...facts.serverStartsMs].sort((a, b) => a - b);
  const unsynced = starts.some((startMs, i) => {
    if (startMs > atMs) return false;
    const nextStartMs = starts[i + 1] ?? Number.POSITIVE_INFINITY;
    const replies = facts.repliedAtMs.filter((r) => r >= startMs && r < nextStartMs);
    const syncedAtMs = replies.length === 0 ? nextStartMs : Math.min(nextStartMs, Math.min(...replies) + facts.syncedAfterReplyMs);
    return atMs <= syncedAtMs + facts.leaseLivesMs;
  });
  return unsynced ? [] : [`agents at once: the organization holds ${liveLeases} live leases at ${atMs}, its plan allows ${facts.agentsAtOnce}`];
}
