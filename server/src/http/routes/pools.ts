import { pools, schemas } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { hasPermission } from '../auth';
import type { AppDeps } from '../deps';
import { runOperation } from '../operation';
import { errorReplies } from './schema-helpers';

const read = { access: { anyOf: ['coordination_read' as const] } };
// Repeat creates (docs/api.md "Authentication and permissions"): a key without resource_config may repeat an identical create.
const create = { access: { anyOf: ['resource_config' as const], repeatCreate: true } };

/**
 * Pools and work limits (docs/design/0009-pools-and-work-limits.md: named by task requirements, claimed by admission).
 * Semantics in core/src/pools; the bounds of capacity and maxConcurrent are in the schemas.
 */
export function poolRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();

    app.get('/pools', {
      config: read,
      schema: { tags: ['pools'], params: schemas.spaceParams, querystring: schemas.listQuery, response: { 200: schemas.poolPage, ...errorReplies() } },
    }, async (request) => deps.store.read((tx) => pools.listPools(tx, request.principal!.space.id, request.query.cursor, request.query.limit)));

    app.post('/pools', {
      config: create,
      schema: {
        tags: ['pools'],
        description: 'Creates a pool (201), or returns the existing one of that name when its capacity is the same (200); another capacity answers 409 CONFLICT.',
        params: schemas.spaceParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.poolCreateBody,
        response: { 200: schemas.poolView, 201: schemas.poolView, ...errorReplies(409, 422) },
      },
    }, async (request, reply) => {
      const canCreate = hasPermission(request.principal!, 'resource_config');
      return runOperation(deps, request, reply, 'key-required', async (ctx) => {
        const result = await pools.createPool(ctx, request.body, canCreate);
        return { statusCode: result.created ? 201 : 200, body: result.view };
      });
    });

    app.get('/pools/:id', {
      config: read,
      schema: { tags: ['pools'], params: schemas.idParams, response: { 200: schemas.poolView, ...errorReplies() } },
    }, async (request) => deps.store.read((tx) => pools.getPool(tx, request.principal!.space.id, request.params.id)));

    app.get('/work-limits', {
      config: read,
      schema: { tags: ['work limits'], params: schemas.spaceParams, querystring: schemas.listQuery, response: { 200: schemas.workLimitPage, ...errorReplies() } },
    }, async (request) => deps.store.read((tx) => pools.listWorkLimits(tx, request.principal!.space.id, request.query.cursor, request.query.limit)));

    app.post('/work-limits', {
      config: create,
      schema: {
        tags: ['work limits'],
        description: 'Creates a work limit (201), or returns the existing one of that name when its maxConcurrent is the same (200); another maxConcurrent answers 409 CONFLICT.',
        params: schemas.spaceParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.workLimitCreateBody,
        response: { 200: schemas.workLimitView, 201: schemas.workLimitView, ...errorReplies(409, 422) },
      },
    }, async (request, reply) => {
      const canCreate = hasPermission(request.principal!, 'resource_config');
      return runOperation(deps, request, reply, 'key-required', async (ctx) => {
        const result = await pools.createWorkLimit(ctx, request.body, canCreate);
        return { statusCode: result.created ? 201 : 200, body: result.view };
      });
    });

    app.get('/work-limits/:id', {
      config: read,
      schema: { tags: ['work limits'], params: schemas.idParams, response: { 200: schemas.workLimitView, ...errorReplies() } },
    }, async (request) => deps.store.read((tx) => pools.getWorkLimit(tx, request.principal!.space.id, request.params.id)));
  };
}
