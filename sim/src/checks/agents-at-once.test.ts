import { describe, expect, it } from 'vitest';
import { checkAgentsAtOnce, type LeaseFacts } from './agents-at-once';

const facts: LeaseFacts = { agentsAtOnce: 10, serverStartsMs: [], repliedAtMs: [], syncedAfterReplyMs: 1_500, leaseLivesMs: 14_500 };

describe('the agents-at-once checker', () => {
  it('accepts up to the limit and flags one lease more', () => {
    expect(checkAgentsAtOnce(10, 5_000, facts)).toEqual([]);
    expect(checkAgentsAtOnce(11, 5_000, facts)).toEqual([expect.stringMatching(/holds 11 live leases at 5000, its plan allows 10/)]);
  });

  it('excuses a restarted server until its first sync and the leases it handed out before it have surely ended', () => {
    const restarted = { ...facts, serverStartsMs: [10_000], repliedAtMs: [9_000, 12_000, 13_000] };
    expect(checkAgentsAtOnce(11, 9_999, restarted)).toHaveLength(1); // before the restart
    expect(checkAgentsAtOnce(20, 10_000, restarted)).toEqual([]);
    expect(checkAgentsAtOnce(20, 12_000 + 1_500 + 14_500, restarted)).toEqual([]);
    expect(checkAgentsAtOnce(11, 12_000 + 1_500 + 14_501, restarted)).toHaveLength(1);
    // Not answered yet since its start: the server may still be unsynced, until the next start.
    expect(checkAgentsAtOnce(11, 100_000, { ...facts, serverStartsMs: [10_000] })).toEqual([]);
    expect(checkAgentsAtOnce(11, 100_000, { ...facts, serverStartsMs: [10_000, 20_000], repliedAtMs: [21_000] })).toHaveLength(1);
  });
});
