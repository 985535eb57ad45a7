import type { z } from 'zod';
import { BatonError, notFound } from '../errors';
import { decodePositionCursor, encodePositionCursor, type CreatedPosition } from '../paging';
import type { Random } from '../random';
import type { keyCreateBody, orgCreateBody, planChangeBody } from '../schemas/admin';
import type { Page } from '../store/page';
import type { Tx } from '../store/store';
import { isoFromMs } from '../time';
import { permissions, type ApiKey, type Org, type Plan, type PlanLimits, type Space } from './model';
import { effectiveLimits } from './plans';

/** Operator operations on organizations, spaces and keys (docs/design/0003-operator-api.md). */

export interface AdminContext {
  tx: Tx;
  nowMs: number;
  random: Random;
}

export function orgView(org: Org) {
  return { id: org.id, name: org.name, plan: org.plan, limits: { ...effectiveLimits(org) }, createdAt: isoFromMs(org.createdAt), updatedAt: isoFromMs(org.updatedAt) };
}

export function spaceView(s: Space) {
  return { id: s.id, orgId: s.orgId, name: s.name, createdAt: isoFromMs(s.createdAt), updatedAt: isoFromMs(s.updatedAt) };
}

export function keyView(k: ApiKey) {
  return {
    id: k.id,
    name: k.name,
    orgId: k.orgId,
    permissions: k.permissions,
    spaceIds: k.spaceIds,
    createdAt: isoFromMs(k.createdAt),
    revokedAt: k.revokedAt === null ? null : isoFromMs(k.revokedAt),
  };
}

function customLimits(plan: Plan, limits: Partial<PlanLimits> | undefined): Partial<PlanLimits> | null {
  if (limits === undefined) return null;
  if (plan !== 'ENTERPRISE') {
    throw new BatonError('VALIDATION_FAILED', 'limits: only an ENTERPRISE plan takes custom limits', [{ path: 'limits', message: 'only an ENTERPRISE plan takes custom limits' }]);
  }
  return limits;
}

export async function createOrg(ctx: AdminContext, body: z.infer<typeof orgCreateBody>): Promise<Org> {
  const org: Org = { id: ctx.random.uuid(), name: body.name, plan: body.plan, limits: customLimits(body.plan, body.limits), createdAt: ctx.nowMs, updatedAt: ctx.nowMs };
  await ctx.tx.orgs.insert(org);
  return org;
}

export async function changePlan(ctx: AdminContext, orgId: string, body: z.infer<typeof planChangeBody>): Promise<Org> {
  const org = await requireOrg(ctx.tx, orgId);
  const next: Org = { ...org, plan: body.plan, limits: customLimits(body.plan, body.limits), updatedAt: ctx.nowMs };
  await ctx.tx.orgs.update(next);
  return next;
}

async function requireOrg(tx: Tx, orgId: string): Promise<Org> {
  const org = await tx.orgs.get(orgId);
  if (!org) throw notFound('organization');
  return org;
}

export async function createSpace(ctx: AdminContext, orgId: string, name: string): Promise<Space> {
  const org = await requireOrg(ctx.tx, orgId);
  const cap = effectiveLimits(org).spaces;
  if (cap !== null && (await ctx.tx.spaces.countByOrg(orgId)) >= cap) {
    throw new BatonError('ENTITLEMENT_EXCEEDED', `plan ${org.plan} allows ${cap} spaces`);
  }
  const space: Space = { id: ctx.random.uuid(), orgId, name, limits: null, createdAt: ctx.nowMs, updatedAt: ctx.nowMs };
  await ctx.tx.spaces.insert(space);
  return space;
}

/** Records a key whose secret the caller generated and hashed; the secret never reaches the store. */
export async function createKey(ctx: AdminContext, orgId: string, body: z.infer<typeof keyCreateBody>, keyId: string, secretHash: string): Promise<ApiKey> {
  const org = await requireOrg(ctx.tx, orgId);
  const cap = effectiveLimits(org).apiKeys;
  if (cap !== null && (await ctx.tx.apiKeys.countActiveByOrg(orgId)) >= cap) {
    throw new BatonError('ENTITLEMENT_EXCEEDED', `plan ${org.plan} allows ${cap} API keys`);
  }
  const spaceIds = body.spaceIds ?? null;
  for (const spaceId of spaceIds ?? []) {
    const space = await ctx.tx.spaces.get(spaceId);
    if (!space || space.orgId !== orgId) throw notFound(`space ${spaceId}`);
  }
  const key: ApiKey = {
    id: keyId,
    orgId,
    name: body.name,
    secretHash,
    permissions: permissions.filter((p) => body.permissions.includes(p)),
    spaceIds: spaceIds === null ? null : [...new Set(spaceIds)],
    createdAt: ctx.nowMs,
    revokedAt: null,
  };
  await ctx.tx.apiKeys.insert(key);
  return key;
}

export async function revokeKey(ctx: AdminContext, keyId: string): Promise<ApiKey> {
  const key = await ctx.tx.apiKeys.get(keyId);
  if (!key) throw notFound('key');
  if (key.revokedAt !== null) return key;
  const revoked = { ...key, revokedAt: ctx.nowMs };
  await ctx.tx.apiKeys.update(revoked);
  return revoked;
}

/** A page request of the operator's lists: `cursor` is a previous page's nextCursor. */
export interface AdminListRequest {
  cursor?: string | undefined;
  limit: number;
}

/** One page of up to `limit` from `read`, asked for one more row to learn whether another page follows. */
async function pageOf<T extends CreatedPosition, V>(request: AdminListRequest, read: (after: CreatedPosition | null, limit: number) => Promise<T[]>, view: (row: T) => V): Promise<Page<V>> {
  const after = request.cursor === undefined ? null : decodePositionCursor(request.cursor);
  const rows = await read(after, request.limit + 1);
  const page = rows.slice(0, request.limit);
  const last = page.at(-1);
  return { items: page.map(view), nextCursor: rows.length > request.limit && last ? encodePositionCursor(last) : null };
}

/** Every organization, oldest first (GET /admin/v1/orgs). */
export function listOrgs(tx: Tx, request: AdminListRequest): Promise<Page<ReturnType<typeof orgView>>> {
  return pageOf(request, (after, limit) => tx.orgs.list(after, limit), orgView);
}

/** An organization's spaces, oldest first; 404 when the organization does not exist. */
export async function listSpaces(tx: Tx, orgId: string, request: AdminListRequest): Promise<Page<ReturnType<typeof spaceView>>> {
  await requireOrg(tx, orgId);
  return pageOf(request, (after, limit) => tx.spaces.listByOrg(orgId, after, limit), spaceView);
}

/**
 * An organization's keys without their secrets (the store has only their hashes, and the view
 * leaves even those out), revoked ones too; with `spaceId`, those that may use that space.
 */
export async function listKeys(tx: Tx, orgId: string, request: AdminListRequest & { spaceId?: string | undefined }): Promise<Page<ReturnType<typeof keyView>>> {
  await requireOrg(tx, orgId);
  const spaceId = request.spaceId ?? null;
  if (spaceId !== null) {
    const space = await tx.spaces.get(spaceId);
    if (!space || space.orgId !== orgId) throw notFound('space');
  }
  return pageOf(request, (after, limit) => tx.apiKeys.listByOrg(orgId, spaceId, after, limit), keyView);
}
