import { describe, expect, it } from 'vitest';
import { checkLimits, type Attempt, type LimitFacts } from './limits';

const facts: LimitFacts = { perMinute: 10, maxDeliveryMs: 100, copiesPerAttempt: 1, serverStartsMs: [], syncedWithinMs: 4_500, operationsLeft: 2 };
const at = (sentAtMs: number, over: Partial<Attempt> = {}): Attempt => ({ agent: 'a', kind: 'read', what: 'read', sentAtMs, repliedAtMs: sentAtMs + 10, statusCode: 200, ...over });
const refusedRecovery = (sentAtMs: number): Attempt => at(sentAtMs, { kind: 'recovery', what: 'cancel', statusCode: 429, code: 'RATE_LIMITED' });

describe('the limits checker', () => {
  it('accepts a recovery call refused once the limit can have been reached in its minute', () => {
    const attempts = [...Array.from({ length: 10 }, (_, i) => at(1_000 + i)), refusedRecovery(2_000)];
    expect(checkLimits(attempts, facts)).toEqual([]);
  });

  it('flags a recovery call refused while fewer than the limit can have been counted, counting lost replies and duplicates', () => {
    const attempts = [...Array.from({ length: 8 }, (_, i) => at(1_000 + i)), at(1_500, { statusCode: undefined, repliedAtMs: undefined }), refusedRecovery(2_000)];
    expect(checkLimits(attempts, facts)).toEqual([expect.stringMatching(/refused RATE_LIMITED with at most 9 of 10/)]);
    expect(checkLimits(attempts, { ...facts, copiesPerAttempt: 2 })).toEqual([]);
    // Calls of the previous minute do not count in this one (beyond the longest delivery).
    const earlier = [...Array.from({ length: 10 }, (_, i) => at(1_000 + i)), refusedRecovery(61_000)];
    expect(checkLimits(earlier, facts)).toHaveLength(1);
  });

  it("flags new work that succeeds a buffered second after the month's last operation, unless a restarted server has not synced", () => {
    const work = (sentAtMs: number, over: Partial<Attempt> = {}) => at(sentAtMs, { kind: 'work', what: 'send', statusCode: 201, ...over });
    const attempts = [work(0), work(100), work(900), work(1_200, { replayed: true }), work(2_000)];
    expect(checkLimits(attempts, facts)).toEqual([expect.stringMatching(/send sent at 2000 succeeded \(201\)/)]);
    expect(checkLimits(attempts, { ...facts, serverStartsMs: [1_500] })).toEqual([]);
    // Sent while the server was down, it reached the process that started before its reply, which had not synced yet.
    const late = [...attempts.slice(0, -1), work(2_000, { repliedAtMs: 2_080 })];
    expect(checkLimits(late, { ...facts, serverStartsMs: [2_050] })).toEqual([]);
    expect(checkLimits(late, { ...facts, serverStartsMs: [2_090] })).toHaveLength(1); // started after the reply: not the server that answered
    expect(checkLimits(attempts, { ...facts, operationsLeft: 4 })).toEqual([]); // the 4th operation is the send itself
  });
});
