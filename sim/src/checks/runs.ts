import { maxGateLevels, type JournalEvent, type Store } from '@baton/core';

/**
 * Runs (docs/design/0019-runs.md), after the liveness phase: a CANCELLED run leaves nothing live under its
 * scopeId: no PENDING or RUNNING task, no HELD claim, no ARMED timer (whenever it was made: an
 * ended run refuses new work, checkNoWorkAfterEnd); its descendants are covered by their own
 * cancel: no run is left ACTIVE under a CANCELLED parent (a child is made only under an ACTIVE
 * parent, so the cascade must reach it).
 */
export async function checkRunsFinal(store: Store, spaceId: string, journal: readonly JournalEvent[]): Promise<string[]> {
  const problems: string[] = [];
  const parentOf = new Map<string, string | null>();
  const cancelledAt = new Map<string, number>();
  for (const e of journal) {
    if (e.type === 'run.created') parentOf.set(e.aggregateId, (e.data as { parentScopeId: string | null }).parentScopeId);
    if (e.type === 'run.cancelled' && !cancelledAt.has(e.aggregateId)) cancelledAt.set(e.aggregateId, e.occurredAt);
  }
  await store.read(async (tx) => {
    for (const [scopeId, atMs] of cancelledAt) {
      const tasks = await tx.tasks.list(spaceId, scopeId, ['PENDING', 'RUNNING'], null, 1_000);
      for (const t of tasks) problems.push(`runs: task ${t.id} of cancelled run ${scopeId} (cancelled at ${atMs}) is still ${t.state}`);
      const claims = await tx.claims.list(spaceId, { claimKey: null, scopeId, states: ['HELD'] }, null, 1_000);
      for (const c of claims) problems.push(`runs: claim ${c.id} (${c.claimKey}) of cancelled run ${scopeId} (cancelled at ${atMs}) is still HELD`);
      const timers = await tx.timers.list(spaceId, { states: ['ARMED'], scopeId }, null, 1_000);
      for (const t of timers) problems.push(`runs: timer ${t.id} (${t.timerKey}) of cancelled run ${scopeId} (cancelled at ${atMs}) is still ARMED`);
    }
    for (const [scopeId, parent] of parentOf) {
      if (parent === null || !cancelledAt.has(parent)) continue;
      const run = await tx.runs.get(spaceId, scopeId);
      if (run?.state === 'ACTIVE') problems.push(`runs: run ${scopeId} is still ACTIVE under its cancelled parent ${parent}`);
      else if (run?.cascadePending) problems.push(`runs: run ${scopeId} still cascading after the liveness phase`);
    }
    for (const scopeId of cancelledAt.keys()) {
      const run = await tx.runs.get(spaceId, scopeId);
      if (run?.state !== 'CANCELLED') problems.push(`runs: run ${scopeId} was cancelled but the store shows ${run?.state}`);
      else if (run.cascadePending) problems.push(`runs: run ${scopeId} still cascading after the liveness phase`);
    }
  });
  return problems;
}

/** The events that create work under a scope, and the scope each names it under. */
const createdUnder: Record<string, (e: JournalEvent) => string | null> = {
  'task.submitted': (e) => e.scopeId,
  'claim.acquired': (e) => e.scopeId,
  'timer.armed': (e) => e.scopeId,
  // An admission's reservation (its data names the task) is part of a task accepted before; only a client's reserve is new work.
  'budget.reserved': (e) => ((e.data as { taskId?: string }).taskId === undefined ? e.scopeId : null),
  'run.created': (e) => (e.data as { parentScopeId: string | null }).parentScopeId,
  'group.created': (e) => (e.data as { parentScopeId: string | null }).parentScopeId,
};

/**
 * docs/design/0019-runs.md: no task, claim, timer, reservation, child run or task group is created under a
 * run after it was COMPLETED or CANCELLED, read from the journal in its order (a creation that
 * committed before the end precedes the end's event there: the end waits for it on the run's
 * row). Work under a task group's gate scope is under the run the group was created under.
 */
export function checkNoWorkAfterEnd(journal: readonly JournalEvent[]): string[] {
  const problems: string[] = [];
  const runs = new Set<string>();
  const gateParent = new Map<string, string | null>();
  const ended = new Map<string, { state: string; eventId: string }>();
  const governing = (scopeId: string): string | undefined => {
    for (let scope: string | null | undefined = scopeId, level = 0; scope && level <= maxGateLevels; scope = gateParent.get(scope), level++) if (runs.has(scope)) return scope;
    return undefined;
  };
  for (const e of journal) {
    const scopeId = createdUnder[e.type]?.(e);
    const run = scopeId ? governing(scopeId) : undefined;
    const end = run === undefined ? undefined : ended.get(run);
    // A reservation's event is the budget's: name the reservation.
    const id = e.type === 'budget.reserved' ? (e.data as { reservationId: string }).reservationId : e.aggregateId;
    if (end) problems.push(`runs: ${e.type} ${id} (event ${e.eventId}) created under run ${run} after it was ${end.state} (event ${end.eventId})`);
    if (e.type === 'run.created') runs.add(e.aggregateId);
    if (e.type === 'group.created' && e.scopeId) gateParent.set(e.scopeId, (e.data as { parentScopeId: string | null }).parentScopeId);
    if ((e.type === 'run.completed' || e.type === 'run.cancelled') && !ended.has(e.aggregateId)) ended.set(e.aggregateId, { state: e.type === 'run.completed' ? 'COMPLETED' : 'CANCELLED', eventId: e.eventId });
  }
  return problems;
}
