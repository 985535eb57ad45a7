import { describe, expect, it } from 'vitest';
import { leaseTimes, minRenewRetryMs, renewRetryInMs } from './lease-timing';

const sentAtMs = Date.parse('2026-01-01T00:00:00.000Z');
const iso = (ms: number): string => new Date(ms).toISOString();

describe('leaseTimes', () => {
  it('counts the lease from the moment the request was sent, not from the reply', () => {
    // The server granted 30 s at +2 s (the request took 2 s to arrive): its expiry is +32 s,
    // but the holder cannot see when the grant happened, so it stops at +30 s.
    const { deadlineMs, renewAtMs } = leaseTimes(iso(sentAtMs + 32_000), 30, sentAtMs);
    expect(deadlineMs).toBe(sentAtMs + 30_000);
    expect(renewAtMs).toBe(sentAtMs + 10_000);
  });

  it('takes the server’s expiry when it is earlier: a lease shortened to maxLeaseSeconds is renewed at a third of what was granted', () => {
    const { deadlineMs, renewAtMs } = leaseTimes(iso(sentAtMs + 15_000), 30, sentAtMs);
    expect(deadlineMs).toBe(sentAtMs + 15_000);
    expect(renewAtMs).toBe(sentAtMs + 5_000);
  });

  it('bounds a local clock running behind the server’s by the count from the send', () => {
    // The server's clock is 10 minutes ahead: its leaseExpiresAt reads 10 minutes late here.
    const { deadlineMs } = leaseTimes(iso(sentAtMs + 600_000 + 30_000), 30, sentAtMs);
    expect(deadlineMs).toBe(sentAtMs + 30_000);
  });

  it('renews at once when the server’s expiry has already passed on the local clock', () => {
    const { deadlineMs, renewAtMs } = leaseTimes(iso(sentAtMs - 1_000), 30, sentAtMs);
    expect(deadlineMs).toBe(sentAtMs - 1_000);
    expect(renewAtMs).toBe(sentAtMs);
  });

  it('falls back to the count from the send when leaseExpiresAt does not parse', () => {
    expect(leaseTimes('not a date', 5, sentAtMs)).toEqual({ deadlineMs: sentAtMs + 5_000, renewAtMs: sentAtMs + 5_000 / 3 });
  });
});

describe('renewRetryInMs', () => {
  it('retries a third of the time left, so two more tries fit before the deadline', () => {
    expect(renewRetryInMs(sentAtMs, sentAtMs + 9_000)).toBe(3_000);
  });

  it('never retries sooner than minRenewRetryMs, even at or past the deadline', () => {
    expect(renewRetryInMs(sentAtMs, sentAtMs + 300)).toBe(minRenewRetryMs);
    expect(renewRetryInMs(sentAtMs, sentAtMs - 1_000)).toBe(minRenewRetryMs);
  });
});
