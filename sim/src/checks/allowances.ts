import type { JournalEvent } from '@baton/core';

/**
 * Allowance invariants, replayed from the store's journal (written in the same transaction as
 * each change): strict FIFO grants, no window over its limit, nothing taken during a cooldown,
 * and (after the liveness phase) nobody left waiting.
 */
export function checkAllowances(journal: JournalEvent[], problems: string[]): void {
  const byAllowance = new Map<string, JournalEvent[]>();
  for (const e of journal) {
    if (e.aggregateType !== 'allowance') continue;
    const list = byAllowance.get(e.aggregateId) ?? [];
    list.push(e);
    byAllowance.set(e.aggregateId, list);
  }
  for (const [id, events] of byAllowance) checkOne(id, events, problems);
}

function checkOne(id: string, events: JournalEvent[], problems: string[]): void {
  const created = events.find((e) => e.type === 'allowance.created');
  if (!created) return;
  const limit = Number(created.data.unitsLimit);
  const line: string[] = [];
  const usedByWindow = new Map<string, number>();
  let cooldownUntil = 0;
  const takeUnits = (e: JournalEvent): void => {
    const window = String(e.data.windowStartsAt);
    const used = (usedByWindow.get(window) ?? 0) + Number(e.data.units);
    usedByWindow.set(window, used);
    if (used > limit) problems.push(`allowance ${id}: window ${window} used ${used} units, limit ${limit}`);
    if (e.occurredAt < cooldownUntil) problems.push(`allowance ${id}: ${e.type} at ${new Date(e.occurredAt).toISOString()} during a cooldown until ${new Date(cooldownUntil).toISOString()}`);
  };
  for (const e of events) {
    const waiterId = String(e.data.waiterId);
    switch (e.type) {
      case 'allowance.waiter_queued':
        line.push(waiterId);
        break;
      case 'allowance.waiter_granted': {
        const at = line.indexOf(waiterId);
        if (at !== 0) problems.push(`allowance ${id}: waiter ${waiterId} granted while ${at < 0 ? 'not in line' : `${at} earlier waiter(s) still WAITING`}`);
        if (at >= 0) line.splice(at, 1);
        takeUnits(e);
        break;
      }
      case 'allowance.waiter_expired':
      case 'allowance.waiter_cancelled':
        if (line.includes(waiterId)) line.splice(line.indexOf(waiterId), 1);
        break;
      case 'allowance.consumed':
        if (line.length > 0) problems.push(`allowance ${id}: consumed while ${line.length} waiter(s) were in line`);
        takeUnits(e);
        break;
      case 'allowance.cooldown_started':
        cooldownUntil = Math.max(cooldownUntil, Date.parse(String(e.data.cooldownUntil)));
        break;
    }
  }
  if (line.length > 0) problems.push(`allowance ${id}: ${line.length} waiter(s) still WAITING after the liveness phase`);
}
