import type { JournalEvent } from '@baton/core';

/**
 * Claims (docs/design/0020-claims.md), checked against what the claim agents were told and the store's
 * journal (`claim.*` events, in commit order):
 * - at any instant at most one live claim per key: a claim's live interval is [acquired,
 *   min(its end event, its leaseExpiresAt as last renewed)], and an acquisition of a key comes
 *   only after the key's previous claim ended (acquisitions and ends alternate), never inside
 *   the previous claim's live interval;
 * - fencing tokens strictly increase per key in acquisition order;
 * - renew and release only while the claim is live (the event's occurredAt before its lease);
 * - a holder whose lease ran out never renews or releases successfully: a 200 to a renew or
 *   release sent at or after the leaseExpiresAt it last heard is a violation (checked as
 *   replies arrive);
 * - every 201 or 200 acquire reply a client saw is in the journal with the same fencing token.
 */
export interface AcquireRecord {
  agent: string;
  claimKey: string;
  sentAtMs: number;
  statusCode: number;
  claimId?: string;
  fencingToken?: number;
}

export class ClaimLedger {
  readonly acquires: AcquireRecord[] = [];

  constructor(private readonly violation: (message: string) => void) {}

  acquired(record: AcquireRecord): void {
    this.acquires.push(record);
  }

  /** A renew or release answered; `knownExpiryMs` is the leaseExpiresAt its holder last heard when it sent it. */
  answered(agent: string, what: 'renew' | 'release', claimId: string, sentAtMs: number, knownExpiryMs: number, statusCode: number): void {
    if (statusCode === 200 && sentAtMs >= knownExpiryMs) {
      this.violation(`claims: ${agent}'s ${what} of claim ${claimId} sent at ${sentAtMs}, at or after the lease it knew ran out (${knownExpiryMs}), answered 200`);
    }
  }
}

interface LiveClaim {
  id: string;
  fencingToken: number;
  acquiredAtMs: number;
  leaseExpiresAtMs: number;
  endedAtMs: number | null;
}

export function checkClaimsJournal(journal: readonly JournalEvent[], ledger: ClaimLedger | undefined): string[] {
  const problems: string[] = [];
  const lastOfKey = new Map<string, LiveClaim>();
  const byId = new Map<string, LiveClaim & { claimKey: string }>();
  for (const e of journal) {
    if (e.aggregateType !== 'claim') continue;
    const data = e.data as { claimKey: string; fencingToken: number; leaseExpiresAt?: string };
    const key = data.claimKey;
    if (e.type === 'claim.acquired') {
      const previous = lastOfKey.get(key);
      if (previous) {
        if (previous.endedAtMs === null) problems.push(`claims: claim ${e.aggregateId} of ${key} acquired at ${e.occurredAt} while claim ${previous.id} (fencing ${previous.fencingToken}) had not ended: two HELD claims of one key`);
        const liveUntil = Math.min(previous.endedAtMs ?? Infinity, previous.leaseExpiresAtMs);
        if (e.occurredAt < liveUntil) problems.push(`claims: claim ${e.aggregateId} of ${key} acquired at ${e.occurredAt} inside claim ${previous.id}'s live interval (until ${liveUntil})`);
        if (data.fencingToken <= previous.fencingToken) problems.push(`claims: claim ${e.aggregateId} of ${key} has fencing token ${data.fencingToken}, not above the previous claim ${previous.id}'s ${previous.fencingToken}`);
      }
      const claim = { id: e.aggregateId, fencingToken: data.fencingToken, acquiredAtMs: e.occurredAt, leaseExpiresAtMs: Date.parse(data.leaseExpiresAt!), endedAtMs: null };
      lastOfKey.set(key, claim);
      byId.set(e.aggregateId, { ...claim, claimKey: key });
      continue;
    }
    const claim = lastOfKey.get(key);
    if (!claim || claim.id !== e.aggregateId) {
      problems.push(`claims: ${e.type} of claim ${e.aggregateId} of ${key}, which is not the key's latest claim`);
      continue;
    }
    if (claim.endedAtMs !== null) {
      problems.push(`claims: ${e.type} of claim ${e.aggregateId} of ${key} after it ended at ${claim.endedAtMs}`);
      continue;
    }
    if (e.type === 'claim.renewed' || e.type === 'claim.released') {
      if (e.occurredAt >= claim.leaseExpiresAtMs) problems.push(`claims: ${e.type} of claim ${e.aggregateId} of ${key} at ${e.occurredAt}, after its lease ran out at ${claim.leaseExpiresAtMs}`);
      if (e.type === 'claim.renewed') claim.leaseExpiresAtMs = Date.parse(data.leaseExpiresAt!);
      else claim.endedAtMs = e.occurredAt;
    } else if (e.type === 'claim.expired') {
      if (e.occurredAt < claim.leaseExpiresAtMs) problems.push(`claims: claim ${e.aggregateId} of ${key} expired at ${e.occurredAt}, before its lease ran out at ${claim.leaseExpiresAtMs}`);
      claim.endedAtMs = e.occurredAt;
    }
  }
  for (const a of ledger?.acquires ?? []) {
    if (a.statusCode !== 200 && a.statusCode !== 201) continue;
    const claim = byId.get(a.claimId!);
    if (!claim) problems.push(`claims: ${a.agent}'s acquire of ${a.claimKey} answered ${a.statusCode} with claim ${a.claimId}, which the journal never acquired`);
    else if (claim.fencingToken !== a.fencingToken || claim.claimKey !== a.claimKey) problems.push(`claims: ${a.agent} was told claim ${a.claimId} of ${a.claimKey} has fencing token ${a.fencingToken}; the journal says ${claim.claimKey} fencing ${claim.fencingToken}`);
  }
  return problems;
}
