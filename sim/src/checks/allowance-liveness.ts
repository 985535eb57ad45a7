import type { JournalEvent, Store } from '@baton/core';

/**
 * Liveness of allowance lines, two ways:
 *
 * - From the journal (`checkAllowanceLiveness`): every pass over a line leaves evidence (a join,
 *   a cancel, a grant or an expiry is followed in its own transaction by a pass from the head).
 *   After the last transaction at a moment with such evidence, the head of the line (its first
 *   waiter not yet expired) must not fit: if no cooldown runs and its units fit in what the
 *   window has left, the pass should have granted it. A line that never grants, or grants too
 *   little, shows here at the first pass that should have served it.
 * - From the stored rows (`checkAllowanceWakes`, after every step): a line's wake time is when
 *   time alone could change it; the grant sweep serves a due line within a tick (a few with a
 *   drain), so a wake time long past means the sweep keeps finding the line due and leaving it
 *   due (a wake time that is not in the future), or never serves it.
 *
 * Only for the allowances the quota agents alone use: task admission takes units of its own
 * allowance without a journal event per take, so a replay of that one would undercount.
 */
export function checkAllowanceLiveness(journal: readonly JournalEvent[], allowanceIds: readonly string[], problems: string[]): void {
  for (const id of allowanceIds) {
    const events = journal.filter((e) => e.aggregateType === 'allowance' && e.aggregateId === id);
    const problem = firstStarvedHead(id, events);
    if (problem) problems.push(problem);
  }
}

interface Waiting {
  id: string;
  units: number;
  expiresAt: number;
}

/** Events a pass over the line follows (or is made of) in the same transaction. */
const passEvidence = new Set(['allowance.waiter_queued', 'allowance.waiter_cancelled', 'allowance.waiter_granted', 'allowance.waiter_expired', 'allowance.cooldown_started']);

function firstStarvedHead(id: string, events: readonly JournalEvent[]): string | undefined {
  const created = events.find((e) => e.type === 'allowance.created');
  if (!created) return undefined;
  const createdAt = created.occurredAt;
  const limit = Number(created.data.unitsLimit);
  const windowMs = Number(created.data.windowSeconds) * 1000;
  const line: Waiting[] = [];
  const usedByWindow = new Map<number, number>();
  let cooldownUntil = 0;
  const leave = (waiterId: string): void => {
    const at = line.findIndex((w) => w.id === waiterId);
    if (at >= 0) line.splice(at, 1);
  };
  for (let i = 0; i < events.length; ) {
    // One moment at a time: a pass's grants and expiries carry the moment of the call that made it.
    const at = events[i]!.occurredAt;
    let passed = false;
    for (; i < events.length && events[i]!.occurredAt === at; i++) {
      const e = events[i]!;
      passed ||= passEvidence.has(e.type);
      const waiterId = String(e.data.waiterId);
      switch (e.type) {
        case 'allowance.waiter_queued':
          line.push({ id: waiterId, units: Number(e.data.units), expiresAt: Date.parse(String(e.data.expiresAt)) });
          break;
        case 'allowance.waiter_granted':
        case 'allowance.consumed': {
          const window = Date.parse(String(e.data.windowStartsAt));
          usedByWindow.set(window, (usedByWindow.get(window) ?? 0) + Number(e.data.units));
          leave(waiterId);
          break;
        }
        case 'allowance.waiter_expired':
        case 'allowance.waiter_cancelled':
          leave(waiterId);
          break;
        case 'allowance.cooldown_started':
          cooldownUntil = Math.max(cooldownUntil, Date.parse(String(e.data.cooldownUntil)));
          break;
      }
    }
    if (!passed || at < cooldownUntil) continue;
    const head = line.find((w) => w.expiresAt > at);
    if (!head) continue;
    const window = createdAt + Math.floor((at - createdAt) / windowMs) * windowMs;
    const used = usedByWindow.get(window) ?? 0;
    if (used + head.units <= limit) {
      return `allowance ${id}: waiter ${head.id} (${head.units} units) at the head of the line was not granted at ${new Date(at).toISOString()}, though the window ${new Date(window).toISOString()} had used ${used} of ${limit} units and no cooldown ran`;
    }
  }
  return undefined;
}

/** A line due this long ago and still due: the grant sweep runs every second, a drain stops it for at most 3 s. */
export const overdueWakeMs = 8_000;

/** After a step: no allowance with waiters has a wake time more than `overdueWakeMs` in the past. */
export async function checkAllowanceWakes(store: Store, spaceId: string, allowanceIds: readonly string[], nowMs: number): Promise<string[]> {
  const problems: string[] = [];
  await store.read(async (tx) => {
    for (const id of allowanceIds) {
      const a = await tx.allowances.get(spaceId, id);
      if (!a || a.wakeAt === null || a.wakeAt >= nowMs - overdueWakeMs) continue;
      if ((await tx.allowanceWaiters.countWaiting(spaceId, id)) === 0) continue;
      problems.push(`allowance ${a.name}: its line was due at ${new Date(a.wakeAt).toISOString()} and is still due at ${new Date(nowMs).toISOString()} with waiters in line`);
    }
  });
  return problems;
}
