import { z } from 'zod';
import { plans } from '../tenancy/model';

const count = (what: string) => z.number().int().min(0).describe(what);
const capOrNone = (what: string) => z.number().int().min(0).nullable().describe(`${what}; null: no cap`);

/** GET /usage (docs/design/0016-limits-and-retry-after.md): the organization's usage against its plan. */
export const usageView = z
  .object({
    month: z.string().describe('The UTC calendar month counted, YYYY-MM'),
    operations: count('Operations this month (docs/api.md, "Limits"): the store\'s total plus what this server has not synced yet; other servers\' last second may be missing'),
    operationsLimit: capOrNone('The plan\'s operations per month; Free stops new work at it (OPERATIONS_EXHAUSTED), paid plans are only counted'),
    activeTasks: count('Tasks PENDING or RUNNING across the organization'),
    activeRuns: count('Runs ACTIVE across the organization (docs/design/0019-runs.md)'),
    liveLeases: count('Leases held at once: CLAIMED messages and pool units in use (agents working at once)'),
    requestsThisMinute: count('Requests of the organization this calendar minute, on every server, as of this server\'s last sync'),
    plan: z.enum(plans),
    planLimits: z
      .object({
        operationsPerMonth: z.number().int().nullable(),
        agentsAtOnce: z.number().int().nullable(),
        spaces: z.number().int().nullable(),
        activeRuns: z.number().int().nullable(),
        activeTasks: z.number().int().nullable(),
        apiKeys: z.number().int().nullable(),
        requestsPerMinute: z.number().int().nullable(),
        payloadBytes: z.number().int(),
        retentionDays: z.number().int(),
      })
      .describe('The limits in force for the organization (null: no cap)'),
  })
  .meta({ id: 'Usage' });
export type UsageView = z.infer<typeof usageView>;
