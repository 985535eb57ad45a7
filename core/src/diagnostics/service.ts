import type { Allowance } from '../allowances/model';
import type { Budget } from '../budgets/model';
import { notFound } from '../errors';
import { decodeNameCursor, decodePositionCursor, encodeNameCursor, encodePositionCursor } from '../paging';
import type { Pool, WorkLimit } from '../pools/model';
import type { CensusView, MailboxBacklogView, ResourceCountView, RunOpsView, ScopeCountsView, TaskWaitView, WaitsView } from '../schemas/diagnostics';
import type { Page } from '../store/page';
import type { Tx } from '../store/store';
import { isoFromMs } from '../time';
import { blockersOf, taskWaitOf, type ResourcesNow } from './blockers';
import { censusResourceStates, diagnosticsCountCap, runResourceStates, type Blocker, type StateCount } from './model';
import type { DeliverySummary, TaskSummary } from './repository';

/**
 * The diagnostics views (docs/design/0018-diagnostics.md; docs/api.md, "Diagnostics"). Reads only, each bounded:
 * counts stop at diagnosticsCountCap, lists at waitListLimit or a page. `nowMs` is the injected
 * clock's reading: ages are measured on the clock that stamped createdAt.
 */

/** Wait lines, barriers and blocked tasks each list at most this many (the oldest or longest first). */
export const waitListLimit = 100;
/** Arrival keys shown per waiting barrier. */
export const arrivalKeyLimit = 100;
/**
 * Tasks of a run's scope examined per page of its live tasks. The scope's tasks are read in
 * submit order through tasks_by_scope, which has no state: a page stops after this many, live
 * or ended, so a run with a long history costs a bounded read per page, never a walk of all of
 * it (a partial index on live tasks would cost every task update its HOT update, migration 014).
 */
export const liveTaskScanLimit = 1_000;

export async function census(tx: Tx, spaceId: string): Promise<CensusView> {
  const rows = await tx.diagnostics.census(spaceId, diagnosticsCountCap);
  return { countCap: diagnosticsCountCap, resources: countsView(censusResourceStates, rows) };
}

export async function backlog(tx: Tx, spaceId: string, nowMs: number, query: { limit: number; cursor?: string | undefined }): Promise<Page<MailboxBacklogView>> {
  const afterName = query.cursor === undefined ? null : decodeNameCursor(query.cursor);
  const rows = await tx.diagnostics.backlog(spaceId, afterName, query.limit + 1, diagnosticsCountCap);
  const page = rows.slice(0, query.limit);
  const items = page.map((c) => ({
    mailboxId: c.mailboxId,
    name: c.mailboxName,
    ready: c.ready,
    claimed: c.claimed,
    dead: c.dead,
    capped: c.ready + c.claimed >= diagnosticsCountCap || c.dead >= diagnosticsCountCap,
    oldestReadyAt: c.oldestReadyAt === null ? null : isoFromMs(c.oldestReadyAt),
    oldestReadyAgeSeconds: c.oldestReadyAt === null ? null : ageSeconds(c.oldestReadyAt, nowMs),
  }));
  return { items, nextCursor: rows.length > query.limit ? encodeNameCursor(page[page.length - 1]!.mailboxName) : null };
}

export async function waits(tx: Tx, spaceId: string, nowMs: number): Promise<WaitsView> {
  const [lines, barriers, gated] = await Promise.all([
    tx.diagnostics.waitLines(spaceId, diagnosticsCountCap),
    tx.diagnostics.waitingBarriers(spaceId, waitListLimit + 1, arrivalKeyLimit),
    tx.diagnostics.gatedDeliveries(spaceId, waitListLimit + 1),
  ]);
  const longest = [...lines].sort((a, b) => b.waiting - a.waiting || (a.allowanceName < b.allowanceName ? -1 : 1));
  const waitersRead = lines.reduce((n, l) => n + l.waiting, 0);
  const examined = gated.slice(0, waitListLimit);
  const explained = await explain(tx, spaceId, nowMs, examined);
  return {
    waitLines: {
      items: longest.slice(0, waitListLimit).map((l) => ({
        allowanceId: l.allowanceId,
        name: l.allowanceName,
        waiting: l.waiting,
        oldestWaiterAt: isoFromMs(l.oldestWaitingAt),
        oldestWaiterAgeSeconds: ageSeconds(l.oldestWaitingAt, nowMs),
      })),
      truncated: lines.length > waitListLimit || waitersRead >= diagnosticsCountCap,
    },
    barriers: {
      items: barriers.slice(0, waitListLimit).map((b) => ({
        barrierId: b.id,
        scopeId: b.scopeId,
        epoch: b.epoch,
        target: b.target,
        arrivals: b.arrivals,
        missing: b.target - b.arrivals,
        arrivalKeys: b.arrivalKeys,
        arrivalKeysTruncated: b.arrivals > b.arrivalKeys.length,
        createdAt: isoFromMs(b.createdAt),
      })),
      truncated: barriers.length > waitListLimit,
    },
    blockedTasks: {
      items: explained.filter((t) => t.waitingOn === 'RESOURCES'),
      examined: examined.length,
      truncated: gated.length > waitListLimit,
    },
  };
}

/**
 * The run view of a scopeId for operators (docs/design/0018-diagnostics.md, docs/design/0019-runs.md): counts of what lives under it,
 * and a page of its PENDING and RUNNING tasks with what each waits for. 404 when nothing lives
 * under the scope. Runs themselves arrive later; until then a run is just its scopeId.
 */
export async function runView(tx: Tx, spaceId: string, scopeId: string, nowMs: number, query: { limit: number; cursor?: string | undefined }): Promise<RunOpsView> {
  const after = query.cursor === undefined ? null : decodePositionCursor(query.cursor);
  const counts = await tx.diagnostics.runCounts(spaceId, scopeId, diagnosticsCountCap);
  if (counts.every((c) => c.count === 0)) throw notFound(`scope ${scopeId}`);
  const scanned = await tx.diagnostics.scopeTasks(spaceId, scopeId, after, liveTaskScanLimit);
  const live = scanned.filter((t) => t.state === 'PENDING' || t.state === 'RUNNING');
  const page = live.slice(0, query.limit);
  // The cursor is the last task this page read: its last listed one when live tasks remain
  // beyond the page, else the last one scanned when the scan stopped at its limit.
  const last = live.length > query.limit ? page[page.length - 1] : scanned.length === liveTaskScanLimit ? scanned[scanned.length - 1] : undefined;
  const deliveries = await tx.diagnostics.deliveries(spaceId, page.flatMap((t) => (t.messageId === null ? [] : [t.messageId])));
  return {
    scopeId,
    counts: countsView(runResourceStates, counts),
    liveTasks: {
      items: await explainTasks(tx, spaceId, nowMs, page, deliveries),
      nextCursor: last ? encodePositionCursor({ createdAt: last.createdAt, id: last.id }) : null,
    },
  };
}

/** The tasks of `deliveries` (READY deliveries with requirements), each with what it waits for. */
async function explain(tx: Tx, spaceId: string, nowMs: number, deliveries: readonly DeliverySummary[]): Promise<TaskWaitView[]> {
  const taskIds = deliveries.flatMap((d) => (d.taskId === null ? [] : [d.taskId]));
  const tasks = new Map((await tx.diagnostics.taskSummaries(spaceId, taskIds)).map((t) => [t.id, t]));
  // Delivery order (oldest first), not the store's order.
  const ordered = taskIds.map((id) => tasks.get(id)).filter((t): t is TaskSummary => t !== undefined && (t.state === 'PENDING' || t.state === 'RUNNING'));
  return explainTasks(tx, spaceId, nowMs, ordered, deliveries);
}

/** `tasks` in their order, each with its delivery (from `deliveries`) and what blocks it. */
async function explainTasks(tx: Tx, spaceId: string, nowMs: number, tasks: readonly TaskSummary[], deliveries: readonly DeliverySummary[]): Promise<TaskWaitView[]> {
  const byMessage = new Map(deliveries.map((d) => [d.messageId, d]));
  const deliveryOf = (t: TaskSummary): DeliverySummary | undefined => (t.messageId === null ? undefined : byMessage.get(t.messageId));
  const gated = tasks.map(deliveryOf).filter((d): d is DeliverySummary => d?.state === 'READY' && d.requirements !== null);
  const resources = await resourcesNow(tx, spaceId, gated);
  return tasks.map((t) => {
    const d = deliveryOf(t);
    const blockers = d?.state === 'READY' && d.requirements !== null ? blockersOf(d.requirements, resources, nowMs) : [];
    return {
      taskId: t.id,
      taskKey: t.taskKey,
      state: t.state,
      mailboxId: t.mailboxId,
      scopeId: t.scopeId,
      waitingOn: taskWaitOf(d, blockers),
      delivery: d
        ? { messageId: d.messageId, state: d.state, attempt: d.attempt, holder: d.holder, holderSession: d.holderSession, leaseExpiresAt: d.leaseExpiresAt === null ? null : isoFromMs(d.leaseExpiresAt) }
        : null,
      blockedBy: blockers.map(blockerView),
    };
  });
}

/** Reads each resource `deliveries` name once, by primary key, all at once; and which allowances have a line (LIMIT 1 each). */
async function resourcesNow(tx: Tx, spaceId: string, deliveries: readonly DeliverySummary[]): Promise<ResourcesNow> {
  const ids = (pick: (d: DeliverySummary) => { id: string }[]): string[] => [...new Set(deliveries.flatMap((d) => pick(d).map((x) => x.id)))];
  const poolIds = ids((d) => d.requirements!.pools);
  const allowanceIds = ids((d) => d.requirements!.quotas);
  const budgetIds = ids((d) => d.requirements!.budgets);
  const workLimitIds = ids((d) => (d.requirements!.workLimit === null ? [] : [d.requirements!.workLimit]));
  const [pools, allowances, budgets, workLimits, queued] = await Promise.all([
    Promise.all(poolIds.map((id) => tx.pools.get(spaceId, id))),
    Promise.all(allowanceIds.map((id) => tx.allowances.get(spaceId, id))),
    Promise.all(budgetIds.map((id) => tx.budgets.get(spaceId, id))),
    Promise.all(workLimitIds.map((id) => tx.workLimits.get(spaceId, id))),
    allowanceIds.length === 0 ? Promise.resolve([]) : tx.diagnostics.allowancesWithWaiters(spaceId, allowanceIds),
  ]);
  return { pools: byId<Pool>(pools), allowances: byId<Allowance>(allowances), budgets: byId<Budget>(budgets), workLimits: byId<WorkLimit>(workLimits), queued: new Set(queued) };
}

const byId = <T extends { id: string }>(rows: readonly (T | undefined)[]): Map<string, T> => new Map(rows.filter((r): r is T => r !== undefined).map((r) => [r.id, r]));

function blockerView(b: Blocker): TaskWaitView['blockedBy'][number] {
  return { resource: b.resource, id: b.id, name: b.name, reason: b.reason, needed: b.needed.toString(), available: b.available.toString(), retryAt: b.retryAtMs === null ? null : isoFromMs(b.retryAtMs) };
}

/** What lives under a scopeId by state (tasks, task groups, reservations), each count capped. */
export async function scopeCounts(tx: Tx, spaceId: string, scopeId: string): Promise<ScopeCountsView> {
  return countsView(runResourceStates, await tx.diagnostics.runCounts(spaceId, scopeId, diagnosticsCountCap));
}

/** Each type's counts by state, every state shown (0 included); `capped` when a type's rows reached the cap. */
function countsView<K extends string>(states: Record<K, readonly string[]>, rows: readonly StateCount<K>[]): Record<K, ResourceCountView> {
  const out = {} as Record<K, ResourceCountView>;
  for (const type of Object.keys(states) as K[]) {
    const byState: Record<string, number> = Object.fromEntries(states[type].map((s) => [s, 0]));
    let total = 0;
    for (const row of rows) {
      if (row.type !== type) continue;
      total += row.count;
      if (row.state !== null) byState[row.state] = (byState[row.state] ?? 0) + row.count;
    }
    out[type] = { total, capped: total >= diagnosticsCountCap, byState };
  }
  return out;
}

/** Never negative: a row stamped by another server whose clock runs ahead is 0 s old (as census-sampler.ts). */
const ageSeconds = (sinceMs: number, nowMs: number): number => Math.max(0, nowMs - sinceMs) / 1000;
