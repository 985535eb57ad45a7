import type { JournalEvent } from '@baton/core';
import { describe, expect, it } from 'vitest';
import { checkAllowanceLiveness } from './allowance-liveness';

/** The line's liveness replay bites: a head left ungranted when it fit is named, sound lines pass. */
let nextId = 0;
const iso = (ms: number): string => new Date(ms).toISOString();
const event = (type: string, occurredAt: number, data: Record<string, unknown> = {}): JournalEvent => ({
  eventId: String(++nextId),
  spaceId: 's',
  type: `allowance.${type}`,
  aggregateType: 'allowance',
  aggregateId: 'a1',
  scopeId: null,
  data,
  occurredAt,
});
/** 10 units per 1 s window from 0. */
const created = event('created', 0, { unitsLimit: 10, windowSeconds: 1 });
const queued = (waiterId: string, units: number, at: number, ttlMs = 30_000) => event('waiter_queued', at, { waiterId, units, expiresAt: iso(at + ttlMs) });
const granted = (waiterId: string, units: number, at: number) => event('waiter_granted', at, { waiterId, units, windowStartsAt: iso(Math.floor(at / 1000) * 1000) });
const consumed = (units: number, at: number) => event('consumed', at, { units, windowStartsAt: iso(Math.floor(at / 1000) * 1000) });

function problemsOf(journal: JournalEvent[]): string[] {
  const problems: string[] = [];
  checkAllowanceLiveness(journal, ['a1'], problems);
  return problems;
}

describe('allowance line liveness', () => {
  it('passes a line served as the window allows: a head that does not fit waits for the next window', () => {
    const journal = [created, consumed(8, 100), queued('w1', 5, 200), queued('w2', 1, 300), granted('w1', 5, 1_000), granted('w2', 1, 1_000)];
    expect(problemsOf(journal)).toEqual([]);
  });

  it('passes a head that fits only once a cooldown ends', () => {
    const journal = [created, event('cooldown_started', 50, { cooldownUntil: iso(2_500) }), queued('w1', 1, 100), queued('w2', 1, 1_200), granted('w1', 1, 2_500), granted('w2', 1, 2_500)];
    expect(problemsOf(journal)).toEqual([]);
  });

  it('names a head that fit when it joined but was not granted', () => {
    const journal = [created, queued('w1', 3, 200), event('waiter_expired', 30_200, { waiterId: 'w1', units: 3 })];
    expect(problemsOf(journal)).toEqual([expect.stringMatching(/waiter w1 \(3 units\) at the head of the line was not granted at 1970-01-01T00:00:00.200Z.*used 0 of 10/)]);
  });

  it('names a head that fit in a new window when a pass served the line, and leaves expired waiters out of the head', () => {
    const journal = [created, consumed(8, 100), queued('w0', 1, 150, 5_000), queued('w1', 5, 200), queued('w2', 1, 1_500), event('waiter_expired', 5_150, { waiterId: 'w0', units: 1 })];
    expect(problemsOf(journal)).toEqual([expect.stringMatching(/waiter w0 \(1 units\).*not granted at 1970-01-01T00:00:00.150Z/)]);
    const headExpired = [created, consumed(10, 100), queued('w0', 1, 150, 5_000), queued('w1', 5, 200), queued('w2', 1, 5_500)];
    expect(problemsOf(headExpired)).toEqual([expect.stringMatching(/waiter w1 \(5 units\).*not granted at 1970-01-01T00:00:05.500Z/)]);
  });
});
