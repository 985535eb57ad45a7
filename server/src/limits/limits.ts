import { BatonError, effectiveLimits, nextMinuteMs, nextMonthMs, spaceLimits, type Org, type Space } from '@baton/core';
import { LeaseHold } from './lease-hold';
import { RequestRate, type RateTicket } from './request-rate';
import type { RoutePolicy } from './route-policy';
import { UsageLedger } from './usage-ledger';

/** docs/design/0016-limits-and-retry-after.md: CONCURRENCY_LIMITED and PLAN_LIMIT_REACHED say come back in one second. */
const loadRetryMs = 1_000;

/** What a reply said, as far as the limits care (items: a batch's, when its body has them). */
export interface CallResult {
  statusCode: number;
  body: unknown;
}

/**
 * The limits of docs/api.md ("Plans", "Limits") and docs/design/0016-limits-and-retry-after.md, decided in memory on every call:
 * request rates (organization and space, the recovery reserve and the give-backs), Free's monthly
 * operations, agents at once and active tasks. Counts come from this server and, for what other
 * servers did, from LimitsSync, at most one sync interval old; nothing here touches the store.
 * Agents at once is counted lease by lease: a claim try holds what it may hand out (holdLeases)
 * until what it did hand out is recorded.
 *
 * A server takes its Limits from its dependencies (BatonOptions.limits), so a test can put a
 * subclass with a known bug in their place (sim/src/bugs/limits.ts) and show its checker
 * catches it; the protected members are what such a subclass needs.
 */
export class Limits {
  readonly ledger = new UsageLedger();

  constructor(readonly rate = new RequestRate()) {}

  /**
   * Admits a call before it runs, or throws the 429 that refuses it. Refusals that come after the
   * rate (monthly stop, agents at once, active tasks) still count as requests: a client that
   * keeps calling past them uses its rate as any other.
   */
  admit(org: Org, space: Space, policy: RoutePolicy, units: number, nowMs: number): RateTicket {
    this.ledger.see(org.id, nowMs);
    const plan = effectiveLimits(org);
    const ticket = this.rate.take(nowMs, org.id, space.id, { orgPerMinute: plan.requestsPerMinute, spacePerMinute: spaceLimits(space, org).requestsPerMinute }, units, policy.recovery);
    if ('code' in ticket) {
      const scope = ticket.code === 'SERVICE_RATE_LIMITED' ? 'the organization' : 'the space';
      const share = policy.recovery ? '' : ` (80 % of ${ticket.limit}; the rest is kept for recovery calls)`;
      throw new BatonError(ticket.code, `${scope} has used its ${ticket.allowed} requests this minute${share}; retry next minute`, undefined, nextMinuteMs(nowMs) - nowMs);
    }
    if (!policy.read && !policy.recovery) this.checkOperations(org, plan.operationsPerMonth, nowMs);
    const load = this.ledger.loadOf(org.id);
    if (policy.claims && plan.agentsAtOnce !== null && this.leasesLeft(org.id, plan.agentsAtOnce) < 1) throw this.concurrencyLimited(org);
    // A submit-batch is refused whole only when not one of its items could create a task; the
    // room left is then for its items, one by one (taskRoom, docs/design/0015-batches.md).
    if (policy.createsTasks && plan.activeTasks !== null && load.activeTasks >= plan.activeTasks) throw activeTasksReached(load.activeTasks, plan.activeTasks);
    if (policy.createsRuns && plan.activeRuns !== null && load.activeRuns + 1 > plan.activeRuns) {
      throw new BatonError('PLAN_LIMIT_REACHED', `active runs: the organization has ${load.activeRuns} ACTIVE, its plan allows ${plan.activeRuns}`, undefined, loadRetryMs);
    }
    return ticket;
  }

  /**
   * What one claim try (recv, admit, a claim, their batches) may hand out, set aside for it: up to
   * `wanted` deliveries of what the plan's agents at once leaves after the live leases and what
   * other tries on this server hold, and more as admission takes it for pool units. Throws
   * CONCURRENCY_LIMITED when not one is left. The caller releases it once the try ended.
   */
  holdLeases(org: Org, wanted: number): LeaseHold {
    const cap = effectiveLimits(org).agentsAtOnce;
    if (cap === null) return new LeaseHold(wanted, () => Number.POSITIVE_INFINITY, () => undefined);
    const left = () => this.leasesLeft(org.id, cap);
    const deliveries = Math.min(wanted, left());
    if (deliveries < 1) throw this.concurrencyLimited(org);
    this.ledger.holdLeases(org.id, deliveries);
    return new LeaseHold(deliveries, left, (leases) => this.ledger.holdLeases(org.id, leases));
  }

  /** CONCURRENCY_LIMITED with the organization's counts as this server sees them. */
  concurrencyLimited(org: Org): BatonError {
    const held = this.ledger.loadOf(org.id).liveLeases + this.ledger.heldLeasesOf(org.id);
    return new BatonError('CONCURRENCY_LIMITED', `the organization holds ${held} leases at once, its plan's limit is ${effectiveLimits(org).agentsAtOnce}; retry when some finish`, undefined, loadRetryMs);
  }

  protected leasesLeft(orgId: string, agentsAtOnce: number): number {
    return Math.max(0, agentsAtOnce - this.ledger.loadOf(orgId).liveLeases - this.ledger.heldLeasesOf(orgId));
  }

  /**
   * How many more tasks the organization may create now (docs/design/0016-limits-and-retry-after.md, active tasks), as this
   * server counts them; undefined when its plan has no cap. A submit-batch creates at most this
   * many, and answers its further creating items PLAN_LIMIT_REACHED, as POST /tasks would.
   */
  taskRoom(org: Org): number | undefined {
    const cap = effectiveLimits(org).activeTasks;
    return cap === null ? undefined : Math.max(0, cap - this.ledger.loadOf(org.id).activeTasks);
  }

  /** Counts what a call that ran (not a replay) did: its operations, the leases and tasks it added. */
  record(orgId: string, policy: RoutePolicy, result: CallResult, ticket: RateTicket | undefined, nowMs: number): number {
    const succeeded = itemsSucceeded(result);
    const operations = policy.renews ? 0 : succeeded;
    this.ledger.recordOperations(orgId, operations, nowMs);
    if (policy.claims) this.ledger.addLoad(orgId, { liveLeases: leasesHandedOut(result) });
    if (policy.createsTasks) this.ledger.addLoad(orgId, { activeTasks: itemsCreated(result) });
    if (policy.createsRuns) this.ledger.addLoad(orgId, { activeRuns: itemsCreated(result) });
    if (ticket && policy.renews) this.rate.giveBack(ticket, Math.min(ticket.units, succeeded));
    // A claim batch counts as its deliveries (docs/design/0015-batches.md): the first was taken on the way in.
    if (ticket && policy.claims && succeeded > ticket.units) this.rate.charge(ticket, succeeded - ticket.units);
    return operations;
  }

  /** Rule 4: a claim that waited at least a second and came back empty is given back. */
  finishEmptyWait(ticket: RateTicket): void {
    this.rate.giveBack(ticket, ticket.units);
  }

  protected checkOperations(org: Org, perMonth: number | null, nowMs: number): void {
    // Paid plans are counted, never stopped (docs/api.md "Limits").
    if (org.plan !== 'FREE' || perMonth === null) return;
    const used = this.ledger.operationsOf(org.id, nowMs);
    if (used < perMonth) return;
    throw new BatonError('OPERATIONS_EXHAUSTED', `the Free plan's ${perMonth} operations this month are used (${used}); work already running can finish`, undefined, nextMonthMs(nowMs) - nowMs);
  }
}

/** PLAN_LIMIT_REACHED for active tasks, come back in a second (docs/design/0016-limits-and-retry-after.md). */
export function activeTasksReached(active: number, cap: number): BatonError {
  return new BatonError('PLAN_LIMIT_REACHED', `active tasks: the organization has ${active} PENDING or RUNNING, its plan allows ${cap}`, undefined, loadRetryMs);
}

/** 2xx replies that did something: a batch's successful items, a claim batch's deliveries, else one (204, an empty claim, is none). */
function itemsSucceeded(result: CallResult): number {
  if (result.statusCode < 200 || result.statusCode >= 300 || result.statusCode === 204) return 0;
  const items = itemsOf(result.body);
  if (items === undefined) return 1;
  return items.filter((item) => !hasStatus(item) || (item.status >= 200 && item.status < 300)).length;
}

/** A claim's leases (docs/design/0016-limits-and-retry-after.md): each delivery claimed and each pool unit admitted with it; a claim's grant is one. */
function leasesHandedOut(result: CallResult): number {
  if (result.statusCode < 200 || result.statusCode >= 300 || result.statusCode === 204) return 0;
  const claimed = itemsOf(result.body) ?? [result.body];
  return claimed.reduce<number>((sum, item) => sum + 1 + poolUnitsOf(item), 0);
}

function poolUnitsOf(delivery: unknown): number {
  const pools = (delivery as { claimed?: { pools?: { units: number }[] } } | null)?.claimed?.pools ?? [];
  return pools.reduce((sum, pool) => sum + pool.units, 0);
}

/** 201s: a submit that created its task (200 joined one), or a batch's items that did. */
function itemsCreated(result: CallResult): number {
  const items = itemsOf(result.body);
  if (items === undefined) return result.statusCode === 201 ? 1 : 0;
  return items.filter((item) => hasStatus(item) && item.status === 201).length;
}

function itemsOf(body: unknown): unknown[] | undefined {
  const items = (body as { items?: unknown } | null | undefined)?.items;
  return Array.isArray(items) ? items : undefined;
}

function hasStatus(item: unknown): item is { status: number } {
  return typeof (item as { status?: unknown } | null)?.status === 'number';
}
