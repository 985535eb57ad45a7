/** Runs (docs/design/0019-runs.md): a scopeId made explicit. Times are epoch ms from the injected clock. */
export const runStates = ['ACTIVE', 'COMPLETED', 'CANCELLED'] as const;
export type RunState = (typeof runStates)[number];

/** Child runs per run (docs/api.md "Fixed bounds"). */
export const childLimitBounds = { min: 1, max: 10_000, default: 1_000 } as const;

export interface Run {
  spaceId: string;
  scopeId: string;
  parentScopeId: string | null;
  name: string | null;
  state: RunState;
  childLimit: number;
  /** Child runs ever created under it (a child that ended still counts against childLimit). */
  children: number;
  /**
   * A cancelled run whose cascade (child runs, live tasks, claims, armed timers) is not finished:
   * the background sweep takes it up in bounded batches, so a crash mid-cascade resumes.
   */
  cascadePending: boolean;
  createdAt: number;
  updatedAt: number;
  endedAt: number | null;
}

/**
 * How many gate scopes up a scope's run is looked for (RunRepository.governing): a group created
 * under a gate scope nests one level deeper; real nesting stays far below this.
 */
export const maxGateLevels = 16;

/** The failure reason of a task cancelled by its run's cancel. */
export const runCancelledReason = 'RUN_CANCELLED';
