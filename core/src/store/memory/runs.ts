import { assert } from '../../assert';
import { maxGateLevels, type Run } from '../../runs/model';
import type { RunRepository } from '../../runs/repository';
import { MemoryTable } from './table';

const key = (spaceId: string, scopeId: string): string => `${spaceId}\u0000${scopeId}`;
const byCreated = (a: Run, b: Run): number => a.createdAt - b.createdAt || (a.scopeId < b.scopeId ? -1 : a.scopeId > b.scopeId ? 1 : 0);

/**
 * Runs in memory; transactions run one at a time, so a claim of cascading runs is a scan and a
 * lock is a no-op. `gateParentOf` answers a gate scope's parent scope (the task groups' table).
 */
export function memoryRuns(
  log: () => (() => void)[] | undefined,
  gateParentOf: (spaceId: string, scopeId: string) => string | null,
): { runs: RunRepository; activeBySpace: () => Map<string, number> } {
  const runs = new MemoryTable<Run>(log);
  const select = (match: (r: Run) => boolean): Run[] => [...runs.scan()].filter(match).map((r) => structuredClone(r));
  /** ACTIVE runs per space: what the usage repository's load counts (memory/usage.ts). */
  const activeBySpace = (): Map<string, number> => {
    const counts = new Map<string, number>();
    for (const r of runs.scan()) if (r.state === 'ACTIVE') counts.set(r.spaceId, (counts.get(r.spaceId) ?? 0) + 1);
    return counts;
  };
  const repository: RunRepository = {
    insert: async (run) => {
      if (runs.has(key(run.spaceId, run.scopeId))) return false;
      runs.set(key(run.spaceId, run.scopeId), run);
      return true;
    },
    get: async (spaceId, scopeId) => runs.get(key(spaceId, scopeId)),
    governing: async (spaceId, scopeId) => {
      let scope: string | null = scopeId;
      for (let level = 0; scope !== null && level <= maxGateLevels; level++) {
        const run = runs.get(key(spaceId, scope));
        if (run) return run;
        scope = gateParentOf(spaceId, scope);
      }
      return undefined;
    },
    update: async (run) => {
      assert(runs.has(key(run.spaceId, run.scopeId)), `update of missing run ${run.scopeId}`);
      runs.set(key(run.spaceId, run.scopeId), run);
    },
    activeChildren: async (spaceId, parentScopeId, limit) =>
      select((r) => r.spaceId === spaceId && r.parentScopeId === parentScopeId && r.state === 'ACTIVE').sort(byCreated).slice(0, limit),
    children: async (spaceId, parentScopeId, afterScopeId, limit) =>
      select((r) => r.spaceId === spaceId && r.parentScopeId === parentScopeId && (afterScopeId === null || r.scopeId > afterScopeId))
        .sort((a, b) => (a.scopeId < b.scopeId ? -1 : 1))
        .slice(0, limit),
    claimCascading: async (limit) => select((r) => r.cascadePending).sort(byCreated).slice(0, limit),
  };
  return { runs: repository, activeBySpace };
}
