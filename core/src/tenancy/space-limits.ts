import type { OpContext } from '../context';
import { BatonError } from '../errors';
import { eventTypes } from '../events/model';
import type { Org, Space } from './model';
import { effectiveLimits } from './plans';

/**
 * Per-space limits (spec, "Per-space limits"): what GET /limits shows and PUT /limits sets.
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

/** The spec: "if the plan later has a lower rate, pinned values above it are lowered to it". */
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

/**
 * PUT /limits: sets the named limits (the others keep what they were). A value above the plan's
 * ceiling (requestsPerMinute above the plan's rate, maxPayloadBytes above its payload size) is
 * ENTITLEMENT_EXCEEDED and sets nothing. Bounds are the schema's.
 */
export async function updateSpaceLimits(ctx: OpContext, space: Space, org: Org, changes: SpaceLimitSettings): Promise<SpaceLimits> {
  const plan = effectiveLimits(org);
  if (changes.requestsPerMinute !== undefined && changes.requestsPerMinute !== null && plan.requestsPerMinute !== null && changes.requestsPerMinute > plan.requestsPerMinute) {
    throw new BatonError('ENTITLEMENT_EXCEEDED', `requestsPerMinute ${changes.requestsPerMinute} is above the ${org.plan} plan's ${plan.requestsPerMinute}`);
  }
  if (changes.maxPayloadBytes !== undefined && changes.maxPayloadBytes > plan.payloadBytes) {
    throw new BatonError('ENTITLEMENT_EXCEEDED', `maxPayloadBytes ${changes.maxPayloadBytes} is above the ${org.plan} plan's payload size ${plan.payloadBytes}`);
  }
  const current = (await ctx.tx.spaces.get(space.id)) ?? space;
  const next: Space = { ...current, limits: { ...(current.limits ?? {}), ...changes }, updatedAt: ctx.nowMs };
  await ctx.tx.spaces.update(next);
  const limits = spaceLimits(next, org);
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, [{ type: eventTypes.spaceLimitsUpdated, aggregateType: 'space', aggregateId: space.id, scopeId: null, data: { changed: changes, limits } }]);
  return limits;
}
