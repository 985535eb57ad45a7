import { assert } from '../assert';
import type { OpContext } from '../context';
import { conflict, forbidden, notFound } from '../errors';
import { eventTypes, type NewEvent } from '../events/model';
import { decodeNameCursor, encodeNameCursor } from '../paging';
import type { PoolCreateBody, PoolView, WorkLimitCreateBody, WorkLimitView } from '../schemas/pools';
import type { Page } from '../store/page';
import type { CapacityRepository } from './repository';
import type { Tx } from '../store/store';
import type { Pool, WorkLimit } from './model';
import { assertPool, assertWorkLimit } from './rules';
import { poolView, workLimitView } from './views';

/**
 * Pool and work-limit set-up and reads. Claims and releases belong to admission, which will
 * emit their events with the admission, completion or expiry that causes them; the
 * repositories' claim and release are the one-statement steps it will use.
 */

export interface Created<T> {
  created: boolean;
  view: T;
}

/**
 * Creates a pool, or returns the existing one when a pool of that name has the same capacity
 * (create-or-get; the repeat-create rule of docs/api.md "Authentication and permissions" lets a key without resource_config do this).
 */
export async function createPool(ctx: OpContext, body: PoolCreateBody, canCreate: boolean): Promise<Created<PoolView>> {
  const pool: Pool = { ...newRow(ctx, body.name), capacity: body.capacity };
  assertPool(pool);
  const result = await createOrGet(ctx, ctx.tx.pools, pool, canCreate, {
    noun: 'pool',
    sameSettings: (existing) => existing.capacity === body.capacity,
    created: { type: eventTypes.poolCreated, aggregateType: 'pool', aggregateId: pool.id, scopeId: null, data: { name: pool.name, capacity: pool.capacity } },
  });
  return { created: result.created, view: poolView(result.row) };
}

/** Creates a work limit, or returns the existing one of that name with the same maxConcurrent. */
export async function createWorkLimit(ctx: OpContext, body: WorkLimitCreateBody, canCreate: boolean): Promise<Created<WorkLimitView>> {
  const limit: WorkLimit = { ...newRow(ctx, body.name), maxConcurrent: body.maxConcurrent };
  assertWorkLimit(limit);
  const result = await createOrGet(ctx, ctx.tx.workLimits, limit, canCreate, {
    noun: 'work limit',
    sameSettings: (existing) => existing.maxConcurrent === body.maxConcurrent,
    created: {
      type: eventTypes.workLimitCreated,
      aggregateType: 'work_limit',
      aggregateId: limit.id,
      scopeId: null,
      data: { name: limit.name, maxConcurrent: limit.maxConcurrent },
    },
  });
  return { created: result.created, view: workLimitView(result.row) };
}

export async function getPool(tx: Tx, spaceId: string, id: string): Promise<PoolView> {
  const pool = await tx.pools.get(spaceId, id);
  if (!pool) throw notFound('pool');
  return poolView(pool);
}

export async function getWorkLimit(tx: Tx, spaceId: string, id: string): Promise<WorkLimitView> {
  const limit = await tx.workLimits.get(spaceId, id);
  if (!limit) throw notFound('work limit');
  return workLimitView(limit);
}

export const listPools = (tx: Tx, spaceId: string, cursor: string | undefined, limit: number): Promise<Page<PoolView>> =>
  pageByName(tx.pools, spaceId, cursor, limit, poolView);

export const listWorkLimits = (tx: Tx, spaceId: string, cursor: string | undefined, limit: number): Promise<Page<WorkLimitView>> =>
  pageByName(tx.workLimits, spaceId, cursor, limit, workLimitView);

interface Named {
  id: string;
  name: string;
}

function newRow(ctx: OpContext, name: string) {
  return { id: ctx.random.uuid(), spaceId: ctx.spaceId, name, inUse: 0, createdAt: ctx.nowMs, updatedAt: ctx.nowMs };
}

interface CreateRules<T> {
  noun: string;
  sameSettings: (existing: T) => boolean;
  created: NewEvent;
}

/**
 * The create-or-get both resources share: an existing name answers with the existing row
 * (identical settings) or CONFLICT; a missing one needs resource_config. A concurrent create
 * of the same name that commits first makes the insert write nothing; this one then answers
 * as a repeat, so a race of identical creates is one 201 and 200s, never a 500.
 */
async function createOrGet<T extends Named>(
  ctx: OpContext,
  repository: CapacityRepository<T>,
  candidate: T,
  canCreate: boolean,
  rules: CreateRules<T>,
): Promise<{ created: boolean; row: T }> {
  const repeat = (existing: T): { created: boolean; row: T } => {
    if (!rules.sameSettings(existing)) throw conflict(`${rules.noun} ${existing.name} exists with other settings`);
    return { created: false, row: existing };
  };
  const existing = await repository.getByName(ctx.spaceId, candidate.name);
  if (existing) return repeat(existing);
  if (!canCreate) throw forbidden('credential lacks resource_config');
  if (!(await repository.insert(candidate))) {
    const winner = await repository.getByName(ctx.spaceId, candidate.name);
    assert(winner, `${rules.noun} ${candidate.name}: insert found the name taken, then no row of that name`);
    return repeat(winner);
  }
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [rules.created]);
  return { created: true, row: candidate };
}

async function pageByName<T extends Named, V>(
  repository: CapacityRepository<T>,
  spaceId: string,
  cursor: string | undefined,
  limit: number,
  view: (row: T) => V,
): Promise<Page<V>> {
  const afterName = cursor === undefined ? null : decodeNameCursor(cursor);
  const rows = await repository.list(spaceId, afterName, limit + 1);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { items: page.map(view), nextCursor: rows.length > limit && last ? encodeNameCursor(last.name) : null };
}
