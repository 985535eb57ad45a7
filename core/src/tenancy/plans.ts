import type { Org, Plan, PlanLimits } from './model';

const kib64 = 64 * 1024;

/**
 * The plan table of docs/api.md ("Plans"). ENTERPRISE is "custom": its defaults are SCALE's, overridden per
 * organization by the operator (docs/design/0003-operator-api.md). Limits not enforced yet are still stored and shown.
 */
export const planLimits: Record<Plan, PlanLimits> = {
  FREE: { operationsPerMonth: 100_000, agentsAtOnce: 10, spaces: 2, activeRuns: 200, activeTasks: 1_000, apiKeys: 10, requestsPerMinute: 600, payloadBytes: kib64, retentionDays: 7 },
  BUILDER: { operationsPerMonth: 2_000_000, agentsAtOnce: 100, spaces: 10, activeRuns: 1_000, activeTasks: 10_000, apiKeys: 25, requestsPerMinute: 1_500, payloadBytes: kib64, retentionDays: 14 },
  TEAM: { operationsPerMonth: 15_000_000, agentsAtOnce: 1_000, spaces: null, activeRuns: 10_000, activeTasks: 100_000, apiKeys: 100, requestsPerMinute: 3_000, payloadBytes: kib64, retentionDays: 30 },
  SCALE: { operationsPerMonth: 100_000_000, agentsAtOnce: 5_000, spaces: null, activeRuns: 50_000, activeTasks: 500_000, apiKeys: 500, requestsPerMinute: 20_000, payloadBytes: kib64, retentionDays: 90 },
  ENTERPRISE: { operationsPerMonth: 100_000_000, agentsAtOnce: 5_000, spaces: null, activeRuns: 50_000, activeTasks: 500_000, apiKeys: 500, requestsPerMinute: 20_000, payloadBytes: kib64, retentionDays: 90 },
  LEGACY: { operationsPerMonth: null, agentsAtOnce: null, spaces: 3, activeRuns: 200, activeTasks: 1_000, apiKeys: 10, requestsPerMinute: 600, payloadBytes: kib64, retentionDays: 7 },
};

/** The limits in force for an organization: its plan's, with ENTERPRISE overrides applied. */
export function effectiveLimits(org: Pick<Org, 'plan' | 'limits'>): PlanLimits {
  return { ...planLimits[org.plan], ...(org.plan === 'ENTERPRISE' ? org.limits ?? {} : {}) };
}
