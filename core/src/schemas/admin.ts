import { z } from 'zod';
import { permissions, plans } from '../tenancy/model';
import { listQuery, name, pageOf, timestamp, uuid, uuidInput } from './common';

/** ENTERPRISE custom limits: any plan-limit field; null means no cap. */
const cap = z.number().int().min(0).nullable().optional();
export const planLimitsBody = z
  .object({
    operationsPerMonth: cap,
    agentsAtOnce: cap,
    spaces: cap,
    activeRuns: cap,
    activeTasks: cap,
    apiKeys: cap,
    requestsPerMinute: cap,
    payloadBytes: z.number().int().min(1).max(65_536).optional(),
    retentionDays: z.number().int().min(1).optional(),
  })
  .strict();

export const orgCreateBody = z.object({ name, plan: z.enum(plans).default('FREE'), limits: planLimitsBody.optional() });
export const planChangeBody = z.object({ plan: z.enum(plans), limits: planLimitsBody.optional() });
export const spaceCreateBody = z.object({ name });
export const keyCreateBody = z.object({
  name: name.default('key'),
  permissions: z.array(z.enum(permissions)).min(1).default([...permissions]),
  spaceIds: z.array(uuidInput).min(1).nullish(),
});
export const clockAdvanceBody = z.object({ ms: z.number().int().min(0).max(10 * 365 * 24 * 3600 * 1000) });

export const orgView = z.object({
  id: uuid,
  name: z.string(),
  plan: z.enum(plans),
  limits: z.record(z.string(), z.number().nullable()).describe('The limits in force for this plan'),
  createdAt: timestamp,
  updatedAt: timestamp,
});
export const spaceView = z.object({ id: uuid, orgId: uuid, name: z.string(), createdAt: timestamp, updatedAt: timestamp });
export const keyView = z.object({
  id: uuid,
  name: z.string(),
  orgId: uuid,
  permissions: z.array(z.enum(permissions)),
  spaceIds: z.array(uuid).nullable().describe('null: every space of the organization'),
  createdAt: timestamp,
  revokedAt: timestamp.nullable(),
});
export const keyCreatedView = keyView.extend({ secret: z.string().describe('Shown only in this reply') });
export const clockView = z.object({ now: timestamp, mode: z.enum(['system', 'manual', 'simulated']) });

/** The operator's lists (GET /admin/v1/orgs, .../spaces, .../keys): oldest first, paged like every list. */
export const adminListQuery = listQuery;
export const keyListQuery = listQuery.extend({
  spaceId: uuidInput.optional().describe('Only the keys that may use this space: keys of every space and keys naming it'),
});
export const orgPage = pageOf(orgView);
export const spacePage = pageOf(spaceView);
export const keyPage = pageOf(keyView).describe('Keys without their secrets: a secret is shown once, when its key is created');
