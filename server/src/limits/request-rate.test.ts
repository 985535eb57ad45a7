import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RequestRate, type RateLimits, type RateTicket } from './request-rate';

const minuteStartMs = Date.UTC(2026, 10, 24, 12, 0);
const spaceOnly = (perMinute: number): RateLimits => ({ orgPerMinute: null, spacePerMinute: perMinute });
const orgOnly = (perMinute: number): RateLimits => ({ orgPerMinute: perMinute, spacePerMinute: null });
const isTicket = (taken: unknown): taken is RateTicket => typeof taken === 'object' && taken !== null && 'units' in taken;

describe('RequestRate', () => {
  it('refuses ordinary calls past 80 % of the limit and recovery calls past all of it', () => {
    const rate = new RequestRate();
    const take = (recovery: boolean) => rate.take(minuteStartMs, 'org', 'space', spaceOnly(10), 1, recovery);
    for (let i = 0; i < 8; i++) expect(isTicket(take(false))).toBe(true);
    expect(take(false)).toMatchObject({ code: 'RATE_LIMITED', limit: 10, allowed: 8 });
    expect(isTicket(take(true))).toBe(true);
    expect(isTicket(take(true))).toBe(true);
    expect(take(true)).toMatchObject({ code: 'RATE_LIMITED', allowed: 10 });
  });

  it('lets one ordinary call through a limit of 1, whose 80 % rounds down to nothing', () => {
    const rate = new RequestRate();
    expect(isTicket(rate.take(minuteStartMs, 'org', 'space', spaceOnly(1), 1, false))).toBe(true);
    expect(rate.take(minuteStartMs, 'org', 'space', spaceOnly(1), 1, false)).toMatchObject({ code: 'RATE_LIMITED', allowed: 1 });
  });

  it('checks the organization before the space, and a refusal counts nothing', () => {
    const rate = new RequestRate();
    const limits: RateLimits = { orgPerMinute: 5, spacePerMinute: 100 };
    for (let i = 0; i < 4; i++) rate.take(minuteStartMs, 'org', `space-${i}`, limits, 1, false);
    expect(rate.take(minuteStartMs, 'org', 'space-9', limits, 1, false)).toMatchObject({ code: 'SERVICE_RATE_LIMITED' });
    expect(rate.requestsOf('org', minuteStartMs)).toBe(4);
  });

  it('counts a batch as its items and refuses one that does not fit whole', () => {
    const rate = new RequestRate();
    expect(isTicket(rate.take(minuteStartMs, 'org', 'space', orgOnly(100), 70, false))).toBe(true);
    expect(rate.take(minuteStartMs, 'org', 'space', orgOnly(100), 11, false)).toMatchObject({ code: 'SERVICE_RATE_LIMITED' });
    expect(isTicket(rate.take(minuteStartMs, 'org', 'space', orgOnly(100), 10, false))).toBe(true);
  });

  it('adds what other servers counted this minute, and forgets it when the minute ends', () => {
    const rate = new RequestRate();
    rate.take(minuteStartMs, 'org', 'space', orgOnly(10), 1, false);
    rate.setOthers(rate.ownCounts(minuteStartMs).minute, new Map([['org', 7]]), minuteStartMs);
    expect(rate.requestsOf('org', minuteStartMs)).toBe(8);
    expect(rate.take(minuteStartMs, 'org', 'space', orgOnly(10), 1, false)).toMatchObject({ code: 'SERVICE_RATE_LIMITED' });
    expect(rate.requestsOf('org', minuteStartMs + 60_000)).toBe(0);
  });

  it("carries the other servers' count forward at their last rate, for at most the time between two reads", () => {
    const rate = new RequestRate();
    const minute = rate.ownCounts(minuteStartMs).minute;
    rate.setOthers(minute, new Map([['org', 10]]), minuteStartMs);
    expect(rate.requestsOf('org', minuteStartMs + 100)).toBe(10); // one read: no rate yet
    rate.setOthers(minute, new Map([['org', 60]]), minuteStartMs + 250); // 50 in 250 ms
    expect(rate.requestsOf('org', minuteStartMs + 375)).toBe(85);
    expect(rate.requestsOf('org', minuteStartMs + 5_000)).toBe(110);
  });

  it('holds ordinary calls to the carried-forward count, and recovery calls only to what the others last reported', () => {
    const rate = new RequestRate();
    const minute = rate.ownCounts(minuteStartMs).minute;
    rate.setOthers(minute, new Map([['org', 1_000]]), minuteStartMs);
    rate.setOthers(minute, new Map([['org', 1_500]]), minuteStartMs + 500); // 1,000/s, then they stopped
    const nowMs = minuteStartMs + 900; // carried forward: 1,500 + 400
    expect(rate.take(nowMs, 'org', 'space', orgOnly(2_000), 1, false)).toMatchObject({ code: 'SERVICE_RATE_LIMITED', allowed: 1_600 });
    expect(isTicket(rate.take(nowMs, 'org', 'space', orgOnly(2_000), 499, true))).toBe(true);
    expect(rate.take(nowMs, 'org', 'space', orgOnly(2_000), 2, true)).toMatchObject({ code: 'SERVICE_RATE_LIMITED', allowed: 2_000 });
  });

  it('gives back to the minute a ticket was taken in, never to the next', () => {
    const rate = new RequestRate();
    const ticket = rate.take(minuteStartMs, 'org', 'space', spaceOnly(10), 3, true);
    if (!isTicket(ticket)) throw new Error('refused');
    rate.giveBack(ticket, 2);
    expect(rate.requestsOf('org', minuteStartMs)).toBe(1);
    const later = rate.take(minuteStartMs + 60_000, 'org', 'space', spaceOnly(10), 1, true);
    rate.giveBack(ticket, 1);
    expect(isTicket(later) && rate.requestsOf('org', minuteStartMs + 60_000)).toBe(1);
  });

  it('never admits more than the limit, nor ordinary calls past 80 % of it, in any sequence of calls', () => {
    const call = fc.record({ recovery: fc.boolean(), units: fc.integer({ min: 1, max: 100 }), giveBack: fc.nat({ max: 100 }) });
    // Shown to bite: with `allowedOf` returning the whole limit for ordinary calls, the 80 % check fails.
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2_000 }), fc.array(call, { maxLength: 300 }), (limit, calls) => {
        const rate = new RequestRate();
        for (const c of calls) {
          const ticket = rate.take(minuteStartMs, 'org', 'space', { orgPerMinute: limit, spacePerMinute: limit }, c.units, c.recovery);
          const used = rate.requestsOf('org', minuteStartMs);
          expect(used).toBeLessThanOrEqual(limit);
          if (!isTicket(ticket)) continue;
          // An ordinary call is admitted only if the count, with it, stays within 80 %, or within one
          // call for limits so small that 80 % rounds down to nothing.
          if (!c.recovery) expect(used).toBeLessThanOrEqual(Math.max(1, Math.floor(limit * 0.8)));
          rate.giveBack(ticket, Math.min(c.giveBack, ticket.units));
        }
      }),
    );
  });
});
