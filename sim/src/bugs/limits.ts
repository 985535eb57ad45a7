import { effectiveLimits, type Org } from '@baton/core';
import { LeaseHold, Limits, RequestRate, type RateLimits, type RateRefusal, type RateTicket } from '@baton-coordination/server';

/**
 * Known bugs of a server's limits, planted by handing the server a Limits with the bug in
 * place of its own (BatonOptions.limits, the seam a server takes its limits from).
 */

/** A claim batch checked as one lease: it gets all it asks for while one lease is left (docs/design/0015-batches.md says item by item). */
export class BatchAsOneLease extends Limits {
  override holdLeases(org: Org, wanted: number): LeaseHold {
    const cap = effectiveLimits(org).agentsAtOnce;
    if (cap === null || this.leasesLeft(org.id, cap) < 1) return super.holdLeases(org, wanted);
    const left = () => this.leasesLeft(org.id, cap);
    this.ledger.holdLeases(org.id, wanted);
    return new LeaseHold(wanted, left, (leases) => this.ledger.holdLeases(org.id, leases));
  }
}

/** Free's monthly operations never stop new work. */
export class OperationsNeverStop extends Limits {
  protected override checkOperations(): void {}
}

/** Recovery calls held to 80 % of a rate limit like every other call: the reserve is gone. */
class RateWithoutReserve extends RequestRate {
  override take(nowMs: number, orgId: string, spaceId: string, limits: RateLimits, units: number): RateTicket | RateRefusal {
    return super.take(nowMs, orgId, spaceId, limits, units, false);
  }
}

export const recoveryReserveIgnored = (): Limits => new Limits(new RateWithoutReserve());
