export const permissions = ['coordination_read', 'coordination_write', 'resource_config', 'usage_read'] as const;
export type Permission = (typeof permissions)[number];

export const plans = ['FREE', 'BUILDER', 'TEAM', 'SCALE', 'ENTERPRISE', 'LEGACY'] as const;
export type Plan = (typeof plans)[number];

/** Times are epoch milliseconds from the injected clock. */
export interface Org {
  id: string;
  name: string;
  plan: Plan;
  /** ENTERPRISE's custom limits; null on the fixed plans. */
  limits: Partial<PlanLimits> | null;
  createdAt: number;
  updatedAt: number;
}

export interface Space {
  id: string;
  orgId: string;
  name: string;
  /** The limits set with PUT /limits; null when none (the defaults; see space-limits.ts). */
  limits: SpaceLimitSettings | null;
  createdAt: number;
  updatedAt: number;
}

export interface ApiKey {
  id: string;
  orgId: string;
  name: string;
  /** SHA-256 of the secret, hex. The secret itself is never stored. */
  secretHash: string;
  permissions: Permission[];
  /** The spaces the key may use; null means every space of its organization. */
  spaceIds: string[] | null;
  createdAt: number;
  revokedAt: number | null;
}

/** Plan limits (docs/api.md "Plans"); null means no cap. */
export interface PlanLimits {
  operationsPerMonth: number | null;
  agentsAtOnce: number | null;
  spaces: number | null;
  activeRuns: number | null;
  activeTasks: number | null;
  apiKeys: number | null;
  requestsPerMinute: number | null;
  payloadBytes: number;
  retentionDays: number;
}

export const planLimitFields = [
  'operationsPerMonth',
  'agentsAtOnce',
  'spaces',
  'activeRuns',
  'activeTasks',
  'apiKeys',
  'requestsPerMinute',
  'payloadBytes',
  'retentionDays',
] as const satisfies readonly (keyof PlanLimits)[];

/**
 * Per-space limits (docs/api.md "Space limits"): what GET /limits shows and PUT /limits sets.
 * A space stores only what was set; the rest are the defaults. requestsPerMinute defaults to
 * the plan's rate and is capped by it; maxPayloadBytes is capped by the plan's payload size.
 */
export interface SpaceLimits {
  requestsPerMinute: number | null;
  maxBacklog: number;
  maxPayloadBytes: number;
  maxLeaseSeconds: number;
  maxPendingWaiters: number;
  maxArmedTimers: number;
}

export type SpaceLimitSettings = Partial<SpaceLimits>;
