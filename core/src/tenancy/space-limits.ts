import type { Org, Space, SpaceLimits } from './model';
import { effectiveLimits } from './plans';

export const spaceLimitBounds = {
  requestsPerMinute: { min: 1, max: 100_000 },
  maxBacklog: { min: 1, max: 1_000_000, default: 1_000 },
  maxPayloadBytes: { min: 1, max: 65_536, default: 65_536 },
  maxLeaseSeconds: { min: 5, max: 600, default: 600 },
  maxPendingWaiters: { min: 1, max: 1_000_000, default: 10_000 },
  maxArmedTimers: { min: 1, max: 1_000_000, default: 10_000 },
} as const;

export const spaceLimitFields = Object.keys(spaceLimitBounds) as (keyof SpaceLimits)[];

/** The limits in force in a space: what it set, else the defaults; never above the plan. */
export function spaceLimits(space: Pick<Space, 'limits'>, org: Pick<Org, 'plan' | 'limits'>): SpaceLimits {
  const plan = effectiveLimits(org);
  const set = space.limits ?? {};
  const b = spaceLimitBounds;
  return {
    requestsPerMinute: capped(set.requestsPerMinute ?? plan.requestsPerMinute, plan.requestsPerMinute),
    maxBacklog: set.maxBacklog ?? b.maxBacklog.default,
    maxPayloadBytes: capped(set.maxPayloadBytes ?? b.maxPayloadBytes.default, plan.payloadBytes)!,
    maxLeaseSeconds: set.maxLeaseSeconds ?? b.maxLeaseSeconds.default,
    maxPendingWaiters: set.maxPendingWaiters ?? b.maxPendingWaiters.default,
    maxArmedTimers: set.maxArmedTimers ?? b.maxArmedTimers.default,
  };
}

/** docs/api.md ("Space limits"): a pinned requestsPerMinute above a later, lower plan rate is lowered to it. */
const capped = (value: number | null, ceiling: number | null): number | null => (value === null || ceiling === null ? value : Math.min(value, ceiling));

/** Defaults for work no request drives (the sweeps), which enforces no space limit. */
export const defaultSpaceLimits: SpaceLimits = {
  requestsPerMinute: null,
  maxBacklog: spaceLimitBounds.maxBacklog.default,
  maxPayloadBytes: spaceLimitBounds.maxPayloadBytes.default,
  maxLeaseSeconds: spaceLimitBounds.maxLeaseSeconds.default,
  maxPendingWaiters: spaceLimitBounds.maxPendingWaiters.default,
  maxArmedTimers: spaceLimitBounds.maxArmedTimers.default,
};
