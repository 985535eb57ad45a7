import type { LockOptions } from '../store/lock-options';
import type { Run } from './model';

export interface RunRepository {
  /** Inserts a new run; false when the space already has a run of that scopeId. */
  insert(run: Run): Promise<boolean>;
  get(spaceId: string, scopeId: string, options?: LockOptions): Promise<Run | undefined>;
  /**
   * The run that work under `scopeId` belongs to (docs/design/0019-runs.md): the run of that scopeId, else
   * the nearest run above it through task groups' gate scopes (a gate scope is a child of its
   * group's parentScopeId), at most maxGateLevels up; undefined when there is none (runs are
   * optional). Locked FOR SHARE until the transaction ends: a run's end (any change of its row)
   * waits for work being created under it, and this read waits for an end in progress and then
   * sees it. Shared, so work under one run is not serialized by it.
   */
  governing(spaceId: string, scopeId: string): Promise<Run | undefined>;
  update(run: Run): Promise<void>;
  /** ACTIVE child runs of a run, up to `limit`, oldest first. */
  activeChildren(spaceId: string, parentScopeId: string, limit: number): Promise<Run[]>;
  /** Child runs of a run by scopeId, after `afterScopeId`, up to `limit`: the run view's list. */
  children(spaceId: string, parentScopeId: string, afterScopeId: string | null, limit: number): Promise<Run[]>;
  /**
   * Up to `limit` cancelled runs of any space whose cascade is unfinished, locked for this
   * transaction; runs another transaction holds are skipped (SKIP LOCKED), so sweeps on several
   * servers share the work.
   */
  claimCascading(limit: number): Promise<Run[]>;
}
