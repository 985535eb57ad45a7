import type { JournalEvent, Store } from '@baton/core';

/**
 * Runs (decisions §10), after the liveness phase: a CANCELLED run leaves nothing live under its
 * scopeId: no PENDING or RUNNING task, no HELD claim, no ARMED timer, created before its cancel
 * (new work under an ended run's scopeId is accepted by design, so what came after the cancel
 * is left out); its descendants are covered by their own cancel: no run is left ACTIVE under a
 * CANCELLED parent (a child is made only under an ACTIVE parent, so the cascade must reach it).
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
      for (const t of tasks) if (t.createdAt < atMs) problems.push(`runs: task ${t.id} of cancelled run ${scopeId} (cancelled at ${atMs}) is still ${t.state}`);
      const claims = await tx.claims.list(spaceId, { claimKey: null, scopeId, states: ['HELD'] }, null, 1_000);
      for (const c of claims) if (c.createdAt < atMs) problems.push(`runs: claim ${c.id} (${c.claimKey}) of cancelled run ${scopeId} (cancelled at ${atMs}) is still HELD`);
      const timers = await tx.timers.list(spaceId, { states: ['ARMED'], scopeId }, null, 1_000);
      for (const t of timers) if (t.createdAt < atMs) problems.push(`runs: timer ${t.id} (${t.timerKey}) of cancelled run ${scopeId} (cancelled at ${atMs}) is still ARMED`);
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
