import { assert, minuteOf } from '@baton/core';

/** docs/design/0016-limits-and-retry-after.md: ordinary calls are refused once 80 % of a minute's limit is used; the rest is kept for recovery calls. */
export const ordinaryShare = 0.8;

export interface RateLimits {
  /** The organization's requests per minute across every server (null: no cap). */
  orgPerMinute: number | null;
  /** The space's requestsPerMinute, enforced by each server alone (docs/api.md "Limits"). */
  spacePerMinute: number | null;
}

export interface RateRefusal {
  code: 'SERVICE_RATE_LIMITED' | 'RATE_LIMITED';
  limit: number;
  /** What the call could have used: the whole limit for a recovery call, 80 % of it otherwise. */
  allowed: number;
}

/** The other servers' counts as one sync read them, and how fast each grew since the sync before. */
interface OthersSample {
  minute: number;
  atMs: number;
  counts: ReadonlyMap<string, number>;
  perMs: ReadonlyMap<string, number>;
  /** Time between this read and the one before: the most a count is carried forward. */
  sinceMs: number;
}

/** What one admitted call took, so that its give-back (docs/api.md "Limits") returns it to the same minute. */
export interface RateTicket {
  minute: number;
  orgId: string;
  spaceId: string;
  units: number;
}

/**
 * The most a call may use of a limit: all of it for recovery calls, 80 % for the rest, but at
 * least one call for a limit above 0: 80 % of a requestsPerMinute of 1 rounds down to 0, which
 * refused every ordinary call forever, including the PUT /limits that would raise the limit.
 */
export function allowedOf(limit: number, recovery: boolean): number {
  if (recovery) return limit;
  return limit > 0 ? Math.max(1, Math.floor(limit * ordinaryShare)) : 0;
}

/**
 * Request counts of the current calendar minute on this server, per organization and per space,
 * plus what the other servers counted for each organization as of the last sync. Taking is
 * a few map lookups: the organization limit holds across servers to within one sync interval of
 * the others' traffic, with no database round trip on the request's path.
 */
export class RequestRate {
  private minute = Number.NEGATIVE_INFINITY;
  private readonly orgs = new Map<string, number>();
  private readonly spaces = new Map<string, number>();
  private others: OthersSample | undefined;

  /** Counts `units` requests, or refuses them (and counts nothing) when a limit would pass its allowed share. */
  take(nowMs: number, orgId: string, spaceId: string, limits: RateLimits, units: number, recovery: boolean): RateTicket | RateRefusal {
    assert(Number.isInteger(units) && units >= 1, `a call takes a positive whole number of requests, not ${units}`);
    this.roll(minuteOf(nowMs));
    // Ordinary calls are held to the carried-forward estimate, which errs high; recovery calls to
    // what the others last reported, so a stale rate never spends the recovery reserve on traffic
    // that stopped (two servers, 2,000 a minute: the carried estimate refused every recovery call
    // for up to a sync interval after ordinary calls were refused, in one CI run of 40).
    const org = this.orgRequests(orgId, nowMs, !recovery);
    if (limits.orgPerMinute !== null && org + units > allowedOf(limits.orgPerMinute, recovery)) {
      return { code: 'SERVICE_RATE_LIMITED', limit: limits.orgPerMinute, allowed: allowedOf(limits.orgPerMinute, recovery) };
    }
    const space = this.spaces.get(spaceId) ?? 0;
    if (limits.spacePerMinute !== null && space + units > allowedOf(limits.spacePerMinute, recovery)) {
      return { code: 'RATE_LIMITED', limit: limits.spacePerMinute, allowed: allowedOf(limits.spacePerMinute, recovery) };
    }
    this.add(orgId, spaceId, units);
    return { minute: this.minute, orgId, spaceId, units };
  }

  /** Counts requests a call turned out to be worth after it ran (a claim batch's extra deliveries), without refusing. */
  charge(ticket: RateTicket, units: number): void {
    if (units > 0 && ticket.minute === this.minute) this.add(ticket.orgId, ticket.spaceId, units);
  }

  /** Returns `units` of a ticket (the give-backs of docs/api.md "Limits"); a ticket of a minute already over has nothing to return to. */
  giveBack(ticket: RateTicket, units: number): void {
    assert(units >= 0 && units <= ticket.units, `give-back of ${units} from a ticket of ${ticket.units}`);
    if (units === 0 || ticket.minute !== this.minute) return;
    this.add(ticket.orgId, ticket.spaceId, -units);
  }

  /** This minute's requests of the organization on every server, as far as this one knows. */
  requestsOf(orgId: string, nowMs: number): number {
    this.roll(minuteOf(nowMs));
    return this.orgRequests(orgId, nowMs);
  }

  /** This server's own counts of the minute, for the sync to publish. */
  ownCounts(nowMs: number): { minute: number; requestsByOrg: Map<string, number> } {
    this.roll(minuteOf(nowMs));
    return { minute: this.minute, requestsByOrg: new Map(this.orgs) };
  }

  /**
   * What the other servers counted in `minute`, read by the sync at `atMs`. Between syncs their
   * counts are carried forward at the rate they grew since the previous read: a busy organization
   * would otherwise pass its limit by the other servers' whole traffic of a sync interval, and that
   * overshoot could eat the recovery reserve (measured: 476 over a limit of 2,000 at 1,400 calls/s
   * on two servers syncing every 500 ms, without it).
   */
  setOthers(minute: number, requestsByOrg: ReadonlyMap<string, number>, atMs: number): void {
    const previous = this.others;
    const perMs = new Map<string, number>();
    if (previous && previous.minute === minute && atMs > previous.atMs) {
      for (const [orgId, count] of requestsByOrg) perMs.set(orgId, Math.max(0, (count - (previous.counts.get(orgId) ?? 0)) / (atMs - previous.atMs)));
    }
    this.others = { minute, atMs, counts: requestsByOrg, perMs, sinceMs: previous && previous.minute === minute ? atMs - previous.atMs : 0 };
  }

  private orgRequests(orgId: string, nowMs: number, carried = true): number {
    return (this.orgs.get(orgId) ?? 0) + this.othersOf(orgId, nowMs, carried);
  }

  /** The other servers' count now: the last read, plus (when `carried`) their last rate over at most one sync interval since. */
  private othersOf(orgId: string, nowMs: number, carried: boolean): number {
    const others = this.others;
    if (!others || others.minute !== this.minute) return 0;
    const carriedMs = carried ? Math.min(Math.max(0, nowMs - others.atMs), others.sinceMs) : 0;
    return (others.counts.get(orgId) ?? 0) + Math.floor((others.perMs.get(orgId) ?? 0) * carriedMs);
  }

  private add(orgId: string, spaceId: string, units: number): void {
    const org = (this.orgs.get(orgId) ?? 0) + units;
    const space = (this.spaces.get(spaceId) ?? 0) + units;
    assert(org >= 0 && space >= 0, `request counts went negative (org ${org}, space ${space})`);
    this.orgs.set(orgId, org);
    this.spaces.set(spaceId, space);
  }

  /** A new calendar minute starts every count at zero. */
  private roll(minute: number): void {
    if (minute <= this.minute) return;
    this.minute = minute;
    this.orgs.clear();
    this.spaces.clear();
  }
}
