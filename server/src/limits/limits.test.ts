import { BatonError, monthOf, type Org } from '@baton/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LeaseHold } from './lease-hold';
import { Limits } from './limits';
import { policyOf } from './route-policy';

const nowMs = Date.UTC(2026, 10, 24, 12, 0);
const orgWith = (agentsAtOnce: number | null): Org => ({ id: 'org', name: 'o', plan: 'ENTERPRISE', limits: { agentsAtOnce, requestsPerMinute: null }, createdAt: 0, updatedAt: 0 });
const recvBatch = policyOf('POST', '/mailboxes/:id/recv-batch');

/** An admit-batch reply of `deliveries`, each admitted with `units` pool units. */
const admitted = (deliveries: number, units: number) => ({
  statusCode: 200,
  body: { items: Array.from({ length: deliveries }, () => ({ claimed: { pools: units > 0 ? [{ name: 'gpu', units }] : [] } })) },
});

/** What the store would say the organization holds, and the ledger's sync of it, as LimitsSync does. */
function syncOf(limits: Limits, liveLeases: number): void {
  const mark = limits.ledger.localLoadMark();
  limits.ledger.applySync(monthOf(nowMs), ['org'], new Map(), new Map([['org', { activeTasks: 0, activeRuns: 0, liveLeases }]]), mark);
}

const isConcurrencyLimited = (error: unknown): boolean => error instanceof BatonError && error.code === 'CONCURRENCY_LIMITED';

describe('Limits: agents at once, lease by lease', () => {
  it('holds a batch to the room left, counts each delivery and pool unit it handed out, and refuses a try with none left', () => {
    const limits = new Limits();
    const org = orgWith(10);
    limits.ledger.see('org', nowMs);
    const first = limits.holdLeases(org, 50);
    expect(first.deliveries).toBe(10);
    // Set aside, not yet recorded: a try beside it finds nothing left.
    expect(() => limits.holdLeases(org, 1)).toThrow(expect.objectContaining({ code: 'CONCURRENCY_LIMITED' }));
    limits.record('org', recvBatch, admitted(4, 0), undefined, nowMs);
    first.release();
    const second = limits.holdLeases(org, 2);
    expect(second.deliveries).toBe(2);
    // Admission takes a candidate's leases, itself and its pool units: from what is set aside, then from the rest.
    expect(second.left()).toBe(6);
    expect(second.take(4)).toBe(true);
    expect(second.take(3)).toBe(false);
    expect(() => limits.holdLeases(org, 1)).not.toThrow();
    limits.record('org', policyOf('POST', '/tasks/admit'), { statusCode: 200, body: { claimed: { pools: [{ name: 'gpu', units: 3 }] } } }, undefined, nowMs);
    second.release();
    expect(limits.ledger.loadOf('org').liveLeases).toBe(8);
    expect(limits.holdLeases(org, 5).deliveries).toBe(1);
  });

  it('holds without counting when the plan has no agents at once', () => {
    const limits = new Limits();
    const hold = limits.holdLeases(orgWith(null), 100);
    expect(hold.deliveries).toBe(100);
    expect(hold.take(1_000)).toBe(true);
    hold.release();
    expect(limits.ledger.heldLeasesOf('org')).toBe(0);
  });

  it('never lets what was handed out pass agentsAtOnce, whatever tries, batches, pool units, ends and syncs interleave', () => {
    type Step =
      | { kind: 'start'; wanted: number; takes: boolean }
      | { kind: 'admit'; which: number; units: number }
      | { kind: 'ask'; which: number; tokens: number; share: number }
      | { kind: 'retry'; which: number }
      | { kind: 'finish'; which: number; share: number }
      | { kind: 'end'; leases: number }
      | { kind: 'sync' };
    const which = fc.nat();
    const share = fc.double({ min: 0, max: 1, noNaN: true });
    const step: fc.Arbitrary<Step> = fc.oneof(
      fc.record({ kind: fc.constant('start' as const), wanted: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 100 })), takes: fc.boolean() }),
      fc.record({ kind: fc.constant('admit' as const), which, units: fc.integer({ min: 0, max: 4 }) }),
      fc.record({ kind: fc.constant('ask' as const), which, tokens: fc.integer({ min: 1, max: 30 }), share }),
      fc.record({ kind: fc.constant('retry' as const), which }),
      fc.record({ kind: fc.constant('finish' as const), which, share }),
      fc.record({ kind: fc.constant('end' as const), leases: fc.integer({ min: 1, max: 5 }) }),
      fc.record({ kind: fc.constant('sync' as const) }),
    );
    /**
     * A try as a route runs it: a recv or recv-batch claims up to its deliveries without taking
     * (`takes` false); an admit or admit-batch takes what it claims as admission does: a
     * candidate with requirements its leases, an ask its tokens', keeping those it claimed with.
     */
    interface Try {
      hold: LeaseHold;
      takes: boolean;
      /** Pool units of each delivery claimed so far in the run under way. */
      claimed: number[];
    }
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), fc.array(step, { maxLength: 80 }), (cap, steps) => {
        const limits = new Limits();
        const org = orgWith(cap);
        limits.ledger.see('org', nowMs);
        /** What the store holds: handed out and recorded, less what ended. */
        let live = 0;
        const open: Try[] = [];
        for (const s of steps) {
          const at = (n: number): Try | undefined => open[n % open.length];
          const tried = s.kind === 'admit' || s.kind === 'ask' || s.kind === 'retry' ? at(s.which) : undefined;
          if (s.kind === 'start') {
            try {
              open.push({ hold: limits.holdLeases(org, s.wanted), takes: s.takes, claimed: [] });
            } catch (error) {
              if (!isConcurrencyLimited(error)) throw error;
            }
          } else if (s.kind === 'admit' && tried?.takes) {
            if (tried.hold.take(1 + s.units)) tried.claimed.push(s.units);
          } else if (s.kind === 'ask' && tried?.takes) {
            const tokens = Math.min(s.tokens, tried.hold.left());
            if (tokens > 0 && tried.hold.take(tokens)) {
              const kept = Math.floor(s.share * tokens);
              tried.hold.giveBack(tokens - kept);
              tried.claimed.push(...Array.from({ length: kept }, () => 0));
            }
          } else if (s.kind === 'retry' && tried) {
            tried.hold.restart();
            tried.claimed = [];
          } else if (s.kind === 'finish' && open.length > 0) {
            const done = open.splice(s.which % open.length, 1)[0]!;
            const claimed = done.takes ? done.claimed : Array.from({ length: Math.floor(s.share * done.hold.deliveries) }, () => 0);
            const items = claimed.map((units) => ({ claimed: { pools: units > 0 ? [{ name: 'gpu', units }] : [] } }));
            const result = items.length === 0 ? { statusCode: 204, body: undefined } : { statusCode: 200, body: { items } };
            live += claimed.reduce((sum, units) => sum + 1 + units, 0);
            limits.record('org', recvBatch, result, undefined, nowMs);
            done.hold.release();
          } else if (s.kind === 'end') {
            live -= Math.min(live, s.leases);
          } else if (s.kind === 'sync') {
            syncOf(limits, live);
          }
          expect(live).toBeLessThanOrEqual(cap);
        }
      }),
      { numRuns: 1_000 },
    );
  });
});
