import type { OpContext } from '../context';
import { notFound } from '../errors';
import { decodePositionCursor, encodePositionCursor } from '../paging';
import { eventTypes } from '../events/model';
import type { ArriveBody, ArriveReply, BarrierCreateBody, BarrierView, NextEpochBody } from '../schemas/barriers';
import type { Page } from '../store/page';
import type { Tx } from '../store/store';
import type { Barrier, BarrierListPosition, BarrierState } from './model';
import { advanceEpoch, cancelBarrier, decideArrival, newBarrier } from './rules';
import { barrierView } from './views';
import { requireOpenScope } from '../runs/guard';

/**
 * Barrier operations. Lock order inside one transaction: the barrier row first, then its
 * arrival rows (docs/lock-order.md); every arrive, nextEpoch and cancel of one barrier
 * therefore runs one after another. Every change appends its event in the same transaction.
 */

/**
 * Creates a barrier. Barriers have no name, so there is no create-or-get: each create makes a
 * new barrier, and a retried create is made safe by its (required) Idempotency-Key.
 */
export async function createBarrier(ctx: OpContext, body: BarrierCreateBody): Promise<BarrierView> {
  await requireOpenScope(ctx, body.scopeId);
  const barrier = newBarrier({ id: ctx.random.uuid(), spaceId: ctx.spaceId, scopeId: body.scopeId, target: body.target }, ctx.nowMs);
  await ctx.tx.barriers.insert(barrier);
  await appendEvent(ctx, barrier, eventTypes.barrierCreated, { target: barrier.target, epoch: barrier.epoch });
  return barrierView(barrier);
}

export async function getBarrier(tx: Tx, spaceId: string, id: string): Promise<BarrierView> {
  const barrier = await tx.barriers.get(spaceId, id);
  if (!barrier) throw notFound('barrier');
  return barrierView(barrier);
}

export interface BarrierListRequest {
  /** Only barriers in one of these states; all when undefined. */
  states: readonly BarrierState[] | undefined;
  cursor: string | undefined;
  limit: number;
}

/** Barriers oldest first (createdAt, then id), optionally filtered by state. */
export async function listBarriers(tx: Tx, spaceId: string, request: BarrierListRequest): Promise<Page<BarrierView>> {
  const after = request.cursor === undefined ? null : decodePositionCursor(request.cursor);
  const rows = await tx.barriers.list(spaceId, request.states ?? null, after, request.limit + 1);
  const page = rows.slice(0, request.limit);
  const last = page.at(-1);
  return { items: page.map(barrierView), nextCursor: rows.length > request.limit && last ? encodePositionCursor(last) : null };
}

async function lockBarrier(ctx: OpContext, id: string): Promise<Barrier> {
  const barrier = await ctx.tx.barriers.get(ctx.spaceId, id, { forUpdate: true });
  if (!barrier) throw notFound('barrier');
  return barrier;
}

/**
 * Counts `arrivalKey` in the epoch (idempotent per epoch: a counted key replays with the
 * current view) and releases the barrier when the count reaches its target.
 */
export async function arrive(ctx: OpContext, id: string, body: ArriveBody): Promise<ArriveReply> {
  const barrier = await lockBarrier(ctx, id);
  const epoch = body.epoch ?? barrier.epoch;
  const prior = await ctx.tx.barriers.getArrival(ctx.spaceId, id, epoch, body.arrivalKey);
  const outcome = decideArrival(barrier, prior !== undefined, body.epoch, ctx.nowMs);
  if (outcome.kind === 'replay') return { ...barrierView(barrier), replay: true };

  const next = outcome.barrier;
  await ctx.tx.barriers.insertArrival({ spaceId: ctx.spaceId, barrierId: id, epoch: next.epoch, arrivalKey: body.arrivalKey, arrivedAt: ctx.nowMs });
  await ctx.tx.barriers.update(next);
  await appendEvent(ctx, next, eventTypes.barrierArrived, { epoch: next.epoch, arrivalKey: body.arrivalKey, arrivals: next.arrivals, target: next.target });
  if (outcome.released) await appendEvent(ctx, next, eventTypes.barrierReleased, { epoch: next.epoch, arrivals: next.arrivals, target: next.target });
  return { ...barrierView(next), replay: false };
}

/** Starts the next epoch of a RELEASED or CANCELLED barrier; see advanceEpoch for `epoch`. */
export async function nextEpoch(ctx: OpContext, id: string, body: NextEpochBody): Promise<BarrierView> {
  const barrier = await lockBarrier(ctx, id);
  const next = advanceEpoch(barrier, body?.epoch, ctx.nowMs);
  if (!next) return barrierView(barrier);
  await ctx.tx.barriers.update(next);
  await appendEvent(ctx, next, eventTypes.barrierEpochAdvanced, { epoch: next.epoch, previousEpoch: barrier.epoch, previousState: barrier.state });
  return barrierView(next);
}

/** Cancels the current epoch of a WAITING barrier; a repeat on a CANCELLED one answers its view. */
export async function cancel(ctx: OpContext, id: string): Promise<BarrierView> {
  const barrier = await lockBarrier(ctx, id);
  const next = cancelBarrier(barrier, ctx.nowMs);
  if (!next) return barrierView(barrier);
  await ctx.tx.barriers.update(next);
  await appendEvent(ctx, next, eventTypes.barrierCancelled, { epoch: next.epoch, arrivals: next.arrivals, target: next.target });
  return barrierView(next);
}

/** Every barrier event carries the barrier as its aggregate and the barrier's scopeId. */
function appendEvent(ctx: OpContext, b: Barrier, type: string, data: Record<string, unknown>): Promise<void> {
  return ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [{ type, aggregateType: 'barrier', aggregateId: b.id, scopeId: b.scopeId, data }]);
}
