import { effectiveLimits, monthOf, schemas } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../deps';
import { errorReplies } from './schema-helpers';

/** GET /usage (docs/design/0016-limits-and-retry-after.md, usage_read): the organization's usage against its plan. */
export function usageRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();

    app.get('/usage', {
      config: { access: { anyOf: ['usage_read'] } },
      schema: {
        tags: ['limits'],
        description:
          "The organization's usage this month against its plan, across all its spaces. Operations and requests are as synced between servers about twice a second; active tasks and live leases are counted now.",
        params: schemas.spaceParams,
        response: { 200: schemas.usageView, ...errorReplies() },
      },
    }, async (request) => {
      const { org } = request.principal!;
      const nowMs = deps.clock.now();
      const month = monthOf(nowMs);
      // A read, not the hot path: one round trip for the stored total and the load, so a server that
      // has not served this organization lately still answers right.
      const [stored, load] = await deps.store.read(async (tx) => Promise.all([tx.usage.operationsOf(month, [org.id]), tx.usage.loadOf([org.id], nowMs)]));
      const planLimits = effectiveLimits(org);
      return {
        month,
        operations: (stored.get(org.id) ?? 0) + deps.limits.ledger.unsyncedOperationsOf(org.id, nowMs),
        operationsLimit: planLimits.operationsPerMonth,
        activeTasks: load.get(org.id)?.activeTasks ?? 0,
        activeRuns: load.get(org.id)?.activeRuns ?? 0,
        liveLeases: load.get(org.id)?.liveLeases ?? 0,
        requestsThisMinute: deps.limits.rate.requestsOf(org.id, nowMs),
        plan: org.plan,
        planLimits,
      };
    });
  };
}
