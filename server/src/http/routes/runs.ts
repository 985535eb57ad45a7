import { runs, schemas } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../deps';
import { runOperation } from '../operation';
import { errorReplies } from './schema-helpers';

const read = { access: { anyOf: ['coordination_read' as const] } };
const write = { access: { anyOf: ['coordination_write' as const] } };
const tags = ['runs'];

/** Runs (docs/design/0019-runs.md; core/src/runs, docs/api.md "Runs"). */
export function runRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();

    app.post('/runs', {
      config: write,
      schema: {
        tags,
        description:
          "Creates a run (201), a child of parentScopeId when given (409 CONFLICT past the parent's childLimit or when it is not ACTIVE). The same scopeId with the same body answers 200 with the run; another body 409. 429 PLAN_LIMIT_REACHED at the plan's active runs.",
        params: schemas.spaceParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.runCreateBody,
        response: { 200: schemas.runView, 201: schemas.runView, ...errorReplies(409, 422, 429) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-required', async (ctx) => {
        const result = await runs.createRun(ctx, request.body);
        return { statusCode: result.created ? 201 : 200, body: result.view };
      }),
    );

    app.get('/runs/:scopeId', {
      config: read,
      schema: {
        tags,
        description: 'The run, a page of its child runs (by scopeId), and counts of what lives under its scopeId by state.',
        params: schemas.runParams,
        querystring: schemas.runQuery,
        response: { 200: schemas.runDetailView, ...errorReplies() },
      },
    }, async (request) => deps.store.read((tx) => runs.getRun(tx, request.principal!.space.id, request.params.scopeId, request.query)));

    const end = (path: 'complete' | 'cancel', description: string, apply: typeof runs.completeRun) =>
      app.post(`/runs/:scopeId/${path}`, {
        config: write,
        schema: { tags, description, params: schemas.runParams, headers: schemas.idempotencyHeaders, response: { 200: schemas.runView, ...errorReplies(409, 422) } },
      }, async (request, reply) => {
        const sent = await runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await apply(ctx, request.params.scopeId) }));
        // What a cancel's own step left (its child runs' cascades, a large run's rest) follows at
        // once, not at the next sweep: it depends on no time (docs/design/0023-service-clock.md).
        if (path === 'cancel') deps.cascadeSoon();
        return sent;
      });

    end('complete', 'ACTIVE to COMPLETED; idempotent on a COMPLETED run, 409 CONFLICT on a CANCELLED one. What lives under it is left as it is; new work under it is refused from then on (409 CONFLICT).', runs.completeRun);
    end(
      'cancel',
      'ACTIVE to CANCELLED, then cancels its ACTIVE child runs (each with its own cascade) and its PENDING or RUNNING tasks (reason RUN_CANCELLED), those of groups created under it included, in bounded batches: the reply shows `cascading: true` while the background sweep finishes them. New work under it is refused from then on (409 CONFLICT). Idempotent on a CANCELLED run, 409 CONFLICT on a COMPLETED one.',
      runs.cancelRun,
    );
  };
}
