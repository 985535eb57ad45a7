/**
 * What a task's delivery needs before admission may claim it, and what a live claim holds
 * (docs/design/0009-pools-and-work-limits.md). Names are resolved to ids once, at submit: pools, allowances, budgets and
 * work limits are never renamed or deleted, so the ids stay good for the delivery's life.
 * Every list is in name order: admission claims, and releases, in that order (docs/lock-order.md).
 */

export interface DeliveryRequirements {
  pools: { id: string; name: string; units: number }[];
  quotas: { id: string; name: string; units: number }[];
  budgets: { id: string; name: string; reserveMinor: string }[];
  workLimit: { id: string; name: string } | null;
}

/**
 * The resources a live claim holds. Pool units and the work-limit slot are leased with the
 * delivery: the delivery's holder, holderSession and leaseExpiresAt are theirs, a renew extends
 * them and the end of the claim returns them. Quota units are spent. Budget reservations ride on
 * the delivery: left ACTIVE for the worker to settle on complete, voided on nack or expiry.
 */
export interface ClaimedResources {
  pools: { id: string; name: string; units: number }[];
  quotas: { id: string; name: string; units: number; consumptionId: string }[];
  budgets: { id: string; name: string; reservationId: string; amountMinor: string }[];
  workLimit: { id: string; name: string } | null;
}

/** The kinds of resource an admission claims, named as their aggregates (and journal topics) are. */
export const resourceKinds = ['pool', 'allowance', 'budget', 'work_limit'] as const;
export type ResourceKind = (typeof resourceKinds)[number];

/**
 * The leases a claim may still hand out under the plan's agents at once (docs/design/0016-limits-and-retry-after.md: each
 * claimed delivery and each pool unit granted with it is a live lease). The server keeps the count
 * in memory (server/src/limits/lease-hold.ts) and has already set aside at least one delivery's.
 * Admission takes what a candidate with requirements would hand out before claiming it and passes
 * it over, as if short, when it cannot; admit-batch takes its tokens' leases before it asks for
 * candidates, and gives back those no candidate was claimed with.
 */
export interface LeaseRoom {
  /** How many leases are left to take now. */
  left(): number;
  /** Takes `n` leases if that many are left, else none: whether it took them. */
  take(n: number): boolean;
  /** Gives back leases taken for claims that did not happen. */
  giveBack(n: number): void;
}

/** No limit: every take succeeds (a plan without agents at once, and callers outside a request). */
export const unlimitedLeases: LeaseRoom = { left: () => Number.POSITIVE_INFINITY, take: () => true, giveBack: () => undefined };

/** The leases a delivery's admission hands out: the delivery itself and each pool unit granted with it. */
export const leasesOf = (r: DeliveryRequirements | null): number => 1 + (r?.pools ?? []).reduce((sum, p) => sum + p.units, 0);

export const hasRequirements = (r: DeliveryRequirements): boolean =>
  r.pools.length > 0 || r.quotas.length > 0 || r.budgets.length > 0 || r.workLimit !== null;

/**
 * Candidates one admit examines before it answers 204. Each passed-over candidate costs a
 * savepoint and a few statements (fewer when an earlier candidate already showed the same
 * resource short), so this bounds an admit's time when a long head of the line is blocked.
 */
export const maxCandidatesPerAdmit = 100;
