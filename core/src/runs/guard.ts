import type { OpContext } from '../context';
import { conflict } from '../errors';
import type { Run } from './model';

/**
 * docs/design/0019-runs.md: a COMPLETED or CANCELLED run refuses new work under its scopeId. Every request
 * that creates work under a scope (a task, a group or its member, a message, a claim, a timer, a
 * reservation, a consumption or waiter, a barrier) reads the scope's run with governingRun,
 * before it takes any other lock (docs/lock-order.md), and refuses with refuseIfEnded. Work
 * under a scope with no run is accepted: runs are optional. This module imports nothing of the
 * services it guards, so any of them can import it.
 */

/** The run work under `scopeId` belongs to, locked against its end for the rest of the transaction (RunRepository.governing). */
export function governingRun(ctx: OpContext, scopeId: string): Promise<Run | undefined> {
  return ctx.tx.runs.governing(ctx.spaceId, scopeId);
}

/** 409 CONFLICT naming the run's state when `run` has ended; nothing when it is ACTIVE or there is none. */
export function refuseIfEnded(run: Run | undefined, scopeId: string): void {
  if (run === undefined || run.state === 'ACTIVE') return;
  const which = run.scopeId === scopeId ? `run ${scopeId}` : `scope ${scopeId} belongs to run ${run.scopeId}, which`;
  throw conflict(`${which} is ${run.state}: it takes no new work`);
}

/** governingRun and refuseIfEnded in one, for a request with no other read to send alongside. */
export async function requireOpenScope(ctx: OpContext, scopeId: string): Promise<void> {
  refuseIfEnded(await governingRun(ctx, scopeId), scopeId);
}
