import { z } from 'zod';
import { name, pageOf, text, timestamp, uuid, uuidInput, workKey } from './common';

export const allowanceCreateBody = z.object({
  name,
  unitsLimit: z.number().int().min(1).max(1_000_000_000),
  windowSeconds: z.number().int().min(1).max(366 * 24 * 3600),
});
export type AllowanceCreateBody = z.infer<typeof allowanceCreateBody>;

export const consumeBody = z.object({ scopeId: uuidInput, units: z.number().int().min(1), holder: text(1, 512), workKey: workKey.optional() });
export type ConsumeBody = z.infer<typeof consumeBody>;

export const waitBody = z.object({ scopeId: uuidInput, units: z.number().int().min(1), holder: text(1, 512), ttlSeconds: z.number().int().min(5).max(3600).default(300) });
export type WaitBody = z.infer<typeof waitBody>;

export const cooldownBody = z.object({ seconds: z.number().int().min(1).max(3600), reason: z.string().max(512).regex(/^[^\u0000]*$/, { message: 'must not contain U+0000' }).optional() });
export type CooldownBody = z.infer<typeof cooldownBody>;

export const waiterQuery = z.object({ waitMs: z.coerce.number().int().min(0).max(120_000).default(0) });

export const allowanceView = z
  .object({
    id: uuid,
    name: z.string(),
    unitsLimit: z.number().int(),
    windowSeconds: z.number().int(),
    windowStartsAt: timestamp,
    usedUnits: z.number().int(),
    availableUnits: z.number().int(),
    cooldownUntil: timestamp.nullable().describe('Set while a cooldown runs; null otherwise'),
    cooldownReason: z.string().nullable(),
    waiting: z.number().int().describe('Waiters in line'),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Allowance' });
export type AllowanceView = z.infer<typeof allowanceView>;
export const allowancePage = pageOf(allowanceView);

export const consumptionView = z
  .object({
    id: uuid,
    allowanceId: uuid,
    scopeId: uuid,
    holder: z.string(),
    units: z.number().int(),
    workKey: z.string().nullable(),
    windowStartsAt: timestamp,
    replay: z.boolean().describe('true when this answers a workKey already consumed'),
    createdAt: timestamp,
  })
  .meta({ id: 'Consumption' });
export type ConsumptionView = z.infer<typeof consumptionView>;

export const waiterView = z
  .object({
    id: uuid,
    allowanceId: uuid,
    scopeId: uuid,
    holder: z.string(),
    units: z.number().int(),
    state: z.enum(['WAITING', 'GRANTED', 'CANCELLED', 'EXPIRED']),
    grantedAt: timestamp.nullable(),
    expiresAt: timestamp,
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'AllowanceWaiter' });
export type WaiterView = z.infer<typeof waiterView>;
