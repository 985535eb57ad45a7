import { z } from 'zod';
import { spaceLimitBounds } from '../tenancy/space-limits';

const bounded = (b: { min: number; max: number }, what: string) => z.number().int().min(b.min).max(b.max).describe(`${b.min} to ${b.max}: ${what}`);

export const spaceLimitsBody = z
  .strictObject({
    requestsPerMinute: bounded(spaceLimitBounds.requestsPerMinute, 'requests per minute in this space, counted by each server alone; at most the plan rate; past 80 % only recovery calls pass, past it 429 RATE_LIMITED').optional(),
    maxBacklog: bounded(spaceLimitBounds.maxBacklog, 'READY plus CLAIMED messages in the space; a send beyond it is 429 BACKLOG_FULL').optional(),
    maxPayloadBytes: bounded(spaceLimitBounds.maxPayloadBytes, 'largest message or result payload, in bytes of JSON; at most the plan payload size').optional(),
    maxLeaseSeconds: bounded(spaceLimitBounds.maxLeaseSeconds, 'longer leases asked by recv, admit or renew are shortened to it').optional(),
    maxPendingWaiters: bounded(spaceLimitBounds.maxPendingWaiters, 'allowance waiters in line in the space; a wait beyond it is 429 BACKLOG_FULL').optional(),
    maxArmedTimers: bounded(spaceLimitBounds.maxArmedTimers, 'ARMED timers in the space; an arm beyond it is 429 BACKLOG_FULL').optional(),
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'name at least one limit to set' });
export type SpaceLimitsBody = z.infer<typeof spaceLimitsBody>;

export const spaceLimitsView = z
  .object({
    requestsPerMinute: z.number().int().nullable().describe('null when the plan has no rate cap and none is set'),
    maxBacklog: z.number().int(),
    maxPayloadBytes: z.number().int(),
    maxLeaseSeconds: z.number().int(),
    maxPendingWaiters: z.number().int(),
    maxArmedTimers: z.number().int(),
  })
  .meta({ id: 'SpaceLimits' });
