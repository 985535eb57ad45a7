import type { JournalEvent, Store } from '@baton/core';

/**
 * Timers (docs/design/0021-timers.md), from the store and its journal after the liveness phase:
 * - a FIRED timer fired exactly once: one `timer.fired` event, and one message with workKey
 *   `timer:<id>` in its mailbox (counted from `message.sent`; any further `timer:<id>...` send is
 *   a second firing);
 * - never before fireAt: the fired event's occurredAt is at or after the timer's fireAt;
 * - a CANCELLED timer never fired (and no timer is both cancelled and fired);
 * - after the liveness phase no timer whose fireAt passed before the last sweep is still ARMED.
 */
export async function checkTimersFinal(store: Store, spaceId: string, journal: readonly JournalEvent[], sweptUntilMs: number): Promise<string[]> {
  const problems: string[] = [];
  const fired = new Map<string, JournalEvent[]>();
  const cancelled = new Set<string>();
  const sends = new Map<string, number>();
  for (const e of journal) {
    if (e.type === 'timer.fired') fired.set(e.aggregateId, [...(fired.get(e.aggregateId) ?? []), e]);
    if (e.type === 'timer.cancelled') cancelled.add(e.aggregateId);
    const workKey = e.type === 'message.sent' ? (e.data as { workKey?: string | null }).workKey : undefined;
    if (workKey?.startsWith('timer:')) {
      const id = workKey.slice('timer:'.length, 'timer:'.length + 36);
      sends.set(id, (sends.get(id) ?? 0) + 1);
    }
  }
  const timers = await store.read(async (tx) => {
    const all = [];
    for (let after: { createdAt: number; id: string } | null = null; ; ) {
      const page = await tx.timers.list(spaceId, { states: null, scopeId: null }, after, 500);
      all.push(...page);
      if (page.length < 500) return all;
      after = { createdAt: page.at(-1)!.createdAt, id: page.at(-1)!.id };
    }
  });
  for (const t of timers) {
    const firings = fired.get(t.id) ?? [];
    const messages = sends.get(t.id) ?? 0;
    if (t.state === 'FIRED') {
      if (firings.length !== 1) problems.push(`timers: timer ${t.id} (${t.timerKey}) fired ${firings.length} times (timer.fired events)`);
      if (messages !== 1) problems.push(`timers: timer ${t.id} (${t.timerKey}) sent ${messages} messages with its workKey timer:${t.id}`);
      for (const f of firings) if (f.occurredAt < t.fireAt) problems.push(`timers: timer ${t.id} fired at ${f.occurredAt}, before its fireAt ${t.fireAt}`);
    } else {
      if (firings.length > 0 || messages > 0) problems.push(`timers: ${t.state} timer ${t.id} (${t.timerKey}) fired (${firings.length} timer.fired, ${messages} messages)`);
      if (t.state === 'ARMED' && t.dueAt < sweptUntilMs) problems.push(`timers: timer ${t.id} (${t.timerKey}) still ARMED though due at ${t.dueAt}, before the last sweep at ${sweptUntilMs}`);
    }
    if (cancelled.has(t.id) && firings.length > 0) problems.push(`timers: timer ${t.id} (${t.timerKey}) was both cancelled and fired`);
  }
  return problems;
}
