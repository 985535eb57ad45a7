import { BatonError, conflict, notFound } from '../errors';
import type { OpContext } from '../context';
import { cancelTask } from '../deliveries/lifecycle';
import { cancelArmedInScope } from '../timers/service';
import { releaseInScope } from '../claims/service';
import { scopeCounts } from '../diagnostics/service';
import { eventTypes, type NewEvent } from '../events/model';
import { decodeNameCursor, encodeNameCursor } from '../paging';
import type { RunCreateBody, RunDetailView, RunView } from '../schemas/runs';
import type { Tx } from '../store/store';
import { defaultSpaceLimits } from '../tenancy/space-limits';
import type { Random } from '../random';
import { isoFromMs } from '../time';
import { runCancelledReason, type Run } from './model';
import { addChild, assertRun, endRun } from './rules';

/**
 * Runs (docs/design/0019-runs.md). Lock order: a parent run before its child (create), a run before what
 * lives under it (cancel's cascade: child runs, then each task's delivery and task as
 * deliveries/lifecycle.ts cancelTask takes them). Work under a scopeId with no run is not
 * touched by any of this: runs are optional.
 */

/** What one cascade step cancels at most of each kind: a cancel's own request does one step, the sweep the rest. */
export const cascadeBatch = 50;

export function runView(run: Run): RunView {
  return {
    scopeId: run.scopeId,
    parentScopeId: run.parentScopeId,
    name: run.name,
    state: run.state,
    childLimit: run.childLimit,
    children: run.children,
    cascading: run.cascadePending,
    createdAt: isoFromMs(run.createdAt),
    endedAt: run.endedAt === null ? null : isoFromMs(run.endedAt),
  };
}

/** Creates a run (201), or answers the existing one of that scopeId when the body says the same (200); otherwise CONFLICT. */
export async function createRun(ctx: OpContext, body: RunCreateBody): Promise<{ view: RunView; created: boolean }> {
  const scopeId = body.scopeId ?? ctx.random.uuid();
  const existing = await ctx.tx.runs.get(ctx.spaceId, scopeId);
  if (existing) return { view: sameRun(existing, body), created: false };
  if (body.parentScopeId === scopeId) throw conflict(`run ${scopeId} cannot be its own parent`);
  if (body.parentScopeId !== undefined) {
    const parent = await ctx.tx.runs.get(ctx.spaceId, body.parentScopeId, { forUpdate: true });
    if (!parent) throw notFound(`parent run ${body.parentScopeId}`);
    await ctx.tx.runs.update(addChild(parent, ctx.nowMs));
  }
  const run: Run = {
    spaceId: ctx.spaceId,
    scopeId,
    parentScopeId: body.parentScopeId ?? null,
    name: body.name ?? null,
    state: 'ACTIVE',
    childLimit: body.childLimit,
    children: 0,
    cascadePending: false,
    createdAt: ctx.nowMs,
    updatedAt: ctx.nowMs,
    endedAt: null,
  };
  assertRun(run);
  // A concurrent create of the same scopeId won the insert: answer as a repeat of it.
  if (!(await ctx.tx.runs.insert(run))) return { view: sameRun((await ctx.tx.runs.get(ctx.spaceId, scopeId))!, body), created: false };
  await appendEvent(ctx, run, eventTypes.runCreated, { parentScopeId: run.parentScopeId, name: run.name, childLimit: run.childLimit });
  return { view: runView(run), created: true };
}

/** A create naming an existing run is a repeat only if it asks for the same run. */
function sameRun(existing: Run, body: RunCreateBody): RunView {
  const same = existing.parentScopeId === (body.parentScopeId ?? null) && existing.name === (body.name ?? null) && existing.childLimit === body.childLimit;
  if (!same) throw conflict(`run ${existing.scopeId} exists with another parentScopeId, name or childLimit`);
  return runView(existing);
}

export async function completeRun(ctx: OpContext, scopeId: string): Promise<RunView> {
  const { next, changed } = endRun(await lockRun(ctx, scopeId), 'COMPLETED', ctx.nowMs);
  if (changed) {
    await ctx.tx.runs.update(next);
    await appendEvent(ctx, next, eventTypes.runCompleted, {});
  }
  return runView(next);
}

/**
 * Cancels the run, then as much of its cascade as one step does: its ACTIVE child runs (each
 * cancelled with a cascade of its own), its armed timers, its held claims (released) and its
 * PENDING or RUNNING tasks (reason RUN_CANCELLED), those of its scopeId and of the gate scopes
 * of task groups created under it. What
 * one step leaves, the background sweep finishes (cascadeDue); the run says `cascading` until then.
 */
export async function cancelRun(ctx: OpContext, scopeId: string): Promise<RunView> {
  const { next, changed } = endRun(await lockRun(ctx, scopeId), 'CANCELLED', ctx.nowMs);
  if (!changed) return runView(next);
  await ctx.tx.runs.update(next);
  await appendEvent(ctx, next, eventTypes.runCancelled, { reason: 'CANCELLED' });
  return runView(await cascadeStep(ctx, next));
}

/** One bounded step of a cancelled run's cascade; clears cascadePending once nothing is left. */
async function cascadeStep(ctx: OpContext, run: Run): Promise<Run> {
  const children = await ctx.tx.runs.activeChildren(ctx.spaceId, run.scopeId, cascadeBatch);
  for (const child of children) {
    const { next } = endRun(child, 'CANCELLED', ctx.nowMs);
    await ctx.tx.runs.update(next);
    await appendEvent(ctx, next, eventTypes.runCancelled, { reason: 'PARENT_CANCELLED' });
  }
  // What lives under the run: its scopeId and the gate scopes of task groups created under it
  // (their members), as work under them is refused once it ended (guard.ts); not child runs'.
  const scopes = await ctx.tx.taskGroups.scopeSubtree(ctx.spaceId, run.scopeId);
  // Timers before tasks: a timer's lock comes before its mailbox's (docs/lock-order.md), and a task's cancel takes message locks.
  const timers = await cancelArmedInScope(ctx, scopes, cascadeBatch, runCancelledReason);
  const claims = await upTo(scopes, (scopeId, limit) => releaseInScope(ctx, scopeId, limit, runCancelledReason));
  const live = await upTo(scopes, async (scopeId, limit) => {
    const tasks = await ctx.tx.tasks.list(ctx.spaceId, scopeId, ['PENDING', 'RUNNING'], null, limit);
    for (const task of tasks) await cancelIfLive(ctx, task.id);
    return tasks.length;
  });
  if ([children.length, timers, claims, live].some((n) => n === cascadeBatch)) return run;
  const done = { ...run, cascadePending: false, updatedAt: ctx.nowMs };
  await ctx.tx.runs.update(done);
  return done;
}

/** Runs `step` over the scopes in turn, each with what is left of cascadeBatch, until it is used up; answers how much was used. */
async function upTo(scopes: readonly string[], step: (scopeId: string, limit: number) => Promise<number>): Promise<number> {
  let used = 0;
  for (const scopeId of scopes) {
    if (used === cascadeBatch) break;
    used += await step(scopeId, cascadeBatch - used);
  }
  return used;
}

/** A task listed live may have ended since (its lock is taken in cancelTask): then there is nothing to cancel. */
async function cancelIfLive(ctx: OpContext, taskId: string): Promise<void> {
  try {
    await cancelTask(ctx, taskId, { reason: runCancelledReason });
  } catch (error) {
    if (!(error instanceof BatonError && error.code === 'CONFLICT')) throw error;
  }
}

/** The sweep: one cascade step for each of up to `limit` cancelled runs with a cascade pending, across spaces. */
export async function cascadeDue(tx: Tx, nowMs: number, limit: number, random: Random): Promise<number> {
  const runs = await tx.runs.claimCascading(limit);
  for (const run of runs) await cascadeStep({ tx, spaceId: run.spaceId, nowMs, random, limits: defaultSpaceLimits }, run);
  return runs.length;
}

/** GET /runs/{scopeId}: the run, a page of its child runs, and what lives under its scopeId by state. */
export async function getRun(tx: Tx, spaceId: string, scopeId: string, query: { limit: number; cursor?: string | undefined }): Promise<RunDetailView> {
  const run = await tx.runs.get(spaceId, scopeId);
  if (!run) throw notFound(`run ${scopeId}`);
  const after = query.cursor === undefined ? null : decodeNameCursor(query.cursor);
  const [children, counts] = await Promise.all([tx.runs.children(spaceId, scopeId, after, query.limit + 1), scopeCounts(tx, spaceId, scopeId)]);
  const page = children.slice(0, query.limit);
  const nextCursor = children.length > query.limit ? encodeNameCursor(page.at(-1)!.scopeId) : null;
  return { ...runView(run), childRuns: { items: page.map(runView), nextCursor }, counts };
}

async function lockRun(ctx: OpContext, scopeId: string): Promise<Run> {
  const run = await ctx.tx.runs.get(ctx.spaceId, scopeId, { forUpdate: true });
  if (!run) throw notFound(`run ${scopeId}`);
  return run;
}

function appendEvent(ctx: OpContext, run: Run, type: string, data: Record<string, unknown>): Promise<void> {
  const event: NewEvent = { type, aggregateType: 'run', aggregateId: run.scopeId, scopeId: run.scopeId, data: { state: run.state, ...data } };
  return ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [event]);
}
