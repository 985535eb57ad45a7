/**
 * What the limits of docs/design/0016-limits-and-retry-after.md keep in the store, shared by every server: operations per
 * organization per month, each server's request count per organization for the current minute,
 * and the load counts (active tasks, live leases) that PLAN_LIMIT_REACHED and
 * CONCURRENCY_LIMITED compare against. None of it is read or written on a request's path: each
 * server syncs it in the background (server/src/limits/limits-sync.ts).
 */
export interface OrgLoad {
  /** Tasks PENDING or RUNNING: counted as tasks whose delivery is READY or CLAIMED (the same thing, on an index requests keep anyway). */
  activeTasks: number;
  /** Leases held at once (docs/api.md "Limits": agents working at once): CLAIMED messages, pool units in use and live claims. */
  liveLeases: number;
  /** Runs ACTIVE (docs/design/0019-runs.md): the plan's active runs. */
  activeRuns: number;
}

export interface UsageRepository {
  /** Adds each organization's operations to its month and answers the totals after. */
  addOperations(month: string, operationsByOrg: ReadonlyMap<string, number>): Promise<Map<string, number>>;
  /** The month's operations of these organizations (absent: none yet). */
  operationsOf(month: string, orgIds: readonly string[]): Promise<Map<string, number>>;
  /** Sets this server's request count per organization for the minute (a count, not a delta: a retried sync cannot double it). */
  putRequestCounts(serverId: string, minute: number, requestsByOrg: ReadonlyMap<string, number>): Promise<void>;
  /** The minute's requests per organization counted by every other server. */
  requestCountsOfOthers(serverId: string, minute: number): Promise<Map<string, number>>;
  /** Deletes request counts of minutes before `minute`, up to `limit` rows; says how many. */
  purgeRequestCountsBefore(minute: number, limit: number): Promise<number>;
  /** Deletes operation records of months before `month` ('YYYY-MM'), up to `limit` rows; says how many. */
  purgeOperationsBefore(month: string, limit: number): Promise<number>;
  /** Each organization's load at `nowMs` (organizations with none are absent). */
  loadOf(orgIds: readonly string[], nowMs: number): Promise<Map<string, OrgLoad>>;
}
