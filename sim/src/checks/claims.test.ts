import type { JournalEvent } from '@baton/core';
import { describe, expect, it } from 'vitest';
import { ClaimLedger, checkClaimsJournal } from './claims';

let position = 0;
const iso = (ms: number): string => new Date(ms).toISOString();
const event = (type: string, id: string, atMs: number, data: Record<string, unknown>): JournalEvent =>
  ({ eventId: String(++position), spaceId: 's', occurredAt: atMs, type, aggregateType: 'claim', aggregateId: id, scopeId: 'scope', data: { claimKey: 'k', holder: 'h', ...data } }) as JournalEvent;
const acquired = (id: string, atMs: number, fencingToken: number, leaseMs = 5_000) => event('claim.acquired', id, atMs, { fencingToken, leaseExpiresAt: iso(atMs + leaseMs) });

describe('the claims checker', () => {
  it('accepts claims of a key that follow one another, with the lease as the end of an unswept claim', () => {
    const journal = [
      acquired('a', 0, 1),
      event('claim.renewed', 'a', 4_000, { fencingToken: 1, leaseExpiresAt: iso(9_000) }),
      event('claim.released', 'a', 6_000, { fencingToken: 1 }),
      acquired('b', 6_000, 2),
      // b's lease ran out at 11,000; the next acquire ends it in its own transaction.
      event('claim.expired', 'b', 12_000, { fencingToken: 2, leaseExpiresAt: iso(11_000), replacedBy: 'c' }),
      acquired('c', 12_000, 3),
    ];
    const ledger = new ClaimLedger(() => undefined);
    ledger.acquired({ agent: 'x', claimKey: 'k', sentAtMs: 5_990, statusCode: 201, claimId: 'b', fencingToken: 2 });
    expect(checkClaimsJournal(journal, ledger)).toEqual([]);
  });

  it('flags two live claims of a key, a fencing token that does not grow, and an acquire reply the journal contradicts', () => {
    const journal = [acquired('a', 0, 1), acquired('b', 1_000, 1)];
    const ledger = new ClaimLedger(() => undefined);
    ledger.acquired({ agent: 'x', claimKey: 'k', sentAtMs: 0, statusCode: 201, claimId: 'a', fencingToken: 7 });
    expect(checkClaimsJournal(journal, ledger)).toEqual([
      expect.stringMatching(/claim b of k acquired at 1000 while claim a .* had not ended/),
      expect.stringMatching(/claim b of k acquired at 1000 inside claim a's live interval/),
      expect.stringMatching(/fencing token 1, not above the previous claim a's 1/),
      expect.stringMatching(/was told claim a of k has fencing token 7/),
    ]);
  });

  it('flags a renew after the lease ran out, in the journal and as a client heard it', () => {
    const journal = [acquired('a', 0, 1), event('claim.renewed', 'a', 5_000, { fencingToken: 1, leaseExpiresAt: iso(10_000) })];
    expect(checkClaimsJournal(journal, undefined)).toEqual([expect.stringMatching(/claim.renewed of claim a of k at 5000, after its lease ran out at 5000/)]);
    const heard: string[] = [];
    const ledger = new ClaimLedger((m) => heard.push(m));
    ledger.answered('x', 'renew', 'a', 4_999, 5_000, 200);
    ledger.answered('x', 'release', 'a', 5_000, 5_000, 409);
    ledger.answered('x', 'release', 'a', 5_000, 5_000, 200);
    expect(heard).toEqual([expect.stringMatching(/release of claim a sent at 5000, at or after the lease it knew ran out \(5000\), answered 200/)]);
  });
});

/**
 * The claims bugs of sim/src/bugs/catalogue.ts cannot get past the memory store's guards (one
 * HELD claim per key, a fencing token never granted twice), so in a run the guard is what stops
 * them. What they would leave in the journal, were a store to let them through, is a sound
 * history mutated as each bug mutates it; the checker must name it.
 */
describe('the claims checker on a sound history with a claims bug written into it', () => {
  const sound = (mutated: { cAtMs?: number; cFencing?: number; bExpires?: boolean } = {}): JournalEvent[] => [
    acquired('a', 0, 1),
    event('claim.released', 'a', 4_000, { fencingToken: 1 }),
    acquired('b', 6_000, 2),
    ...(mutated.bExpires === false ? [] : [event('claim.expired', 'b', 12_000, { fencingToken: 2, leaseExpiresAt: iso(11_000), replacedBy: 'c' })]),
    acquired('c', mutated.cAtMs ?? 12_000, mutated.cFencing ?? 3),
  ];

  it('passes the history as it is', () => {
    expect(checkClaimsJournal(sound(), undefined)).toEqual([]);
  });

  it('names claim-fencing-reused: the next grant of a key carries the last one\'s fencing token', () => {
    expect(checkClaimsJournal(sound({ cFencing: 2 }), undefined)).toEqual([expect.stringMatching(/claim c of k has fencing token 2, not above the previous claim b's 2/)]);
  });

  it('names claim-ignores-held: a key taken while its holder\'s lease is live', () => {
    expect(checkClaimsJournal(sound({ cAtMs: 8_000, bExpires: false }), undefined)).toContainEqual(expect.stringMatching(/claim c of k acquired at 8000 while claim b .* had not ended/));
  });
});
