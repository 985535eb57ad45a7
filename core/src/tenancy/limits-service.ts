import type { OpContext } from '../context';
import { BatonError } from '../errors';
import { eventTypes } from '../events/model';
import type { Org, Space, SpaceLimits, SpaceLimitSettings } from './model';
import { effectiveLimits } from './plans';
import { spaceLimits } from './space-limits';

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
