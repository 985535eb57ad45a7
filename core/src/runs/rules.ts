import { assert } from '../assert';
import { conflict } from '../errors';
import { childLimitBounds, type Run } from './model';

/** A run as stored must hold these; a break is a bug, not a client's mistake. */
export function assertRun(run: Run): void {
  assert(run.childLimit >= childLimitBounds.min && run.childLimit <= childLimitBounds.max, `run ${run.scopeId}: childLimit ${run.childLimit}`);
  assert(run.children >= 0 && run.children <= run.childLimit, `run ${run.scopeId}: ${run.children} children of ${run.childLimit}`);
  assert((run.state === 'ACTIVE') === (run.endedAt === null), `run ${run.scopeId}: ${run.state} with endedAt ${run.endedAt}`);
  assert(!run.cascadePending || run.state === 'CANCELLED', `run ${run.scopeId}: a cascade pending while ${run.state}`);
  assert(run.parentScopeId !== run.scopeId, `run ${run.scopeId} is its own parent`);
}

/** A run ends once: ACTIVE to COMPLETED or CANCELLED. The same end again is a no-op (idempotent); the other is CONFLICT. */
export function endRun(run: Run, to: 'COMPLETED' | 'CANCELLED', nowMs: number): { next: Run; changed: boolean } {
  if (run.state === to) return { next: run, changed: false };
  if (run.state !== 'ACTIVE') throw conflict(`run ${run.scopeId} is ${run.state}`);
  const next: Run = { ...run, state: to, endedAt: nowMs, updatedAt: nowMs, cascadePending: to === 'CANCELLED' };
  assertRun(next);
  return { next, changed: true };
}

/** A parent takes one more child, within its childLimit, while ACTIVE. */
export function addChild(parent: Run, nowMs: number): Run {
  if (parent.state !== 'ACTIVE') throw conflict(`parent run ${parent.scopeId} is ${parent.state}`);
  if (parent.children >= parent.childLimit) throw conflict(`parent run ${parent.scopeId} has its childLimit of ${parent.childLimit} children`);
  const next = { ...parent, children: parent.children + 1, updatedAt: nowMs };
  assertRun(next);
  return next;
}
