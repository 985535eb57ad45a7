import type { z } from 'zod';
import { BatonError, notFound } from '../errors';
import type { Random } from '../random';
import type { keyCreateBody, orgCreateBody, planChangeBody } from '../schemas/admin';
import type { Tx } from '../store/store';
import { isoFromMs } from '../time';
import { permissions, type ApiKey, type Org, type Plan, type PlanLimits, type Space } from './model';
import { effectiveLimits } from './plans';

/** Operator operations on organizations, spaces and keys (decisions §2). */

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
