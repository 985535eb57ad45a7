import { barriers, schemas, stillWaiting, topicOf } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../deps';
import { longPoll } from '../long-poll';
import { runOperation } from '../operation';
import { errorReplies } from './schema-helpers';

const read = { access: { anyOf: ['coordination_read' as const] } };
const write = { access: { anyOf: ['coordination_write' as const] } };
const tags = ['barriers'];

/** The barrier routes; semantics in core/src/barriers, the reference in docs/api.md ("Barriers"). */
export function barrierRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();

    app.get('/barriers', {
      config: read,
      schema: {
        tags,
        description: 'Barriers oldest first; `state=WAITING` or `state=WAITING,RELEASED` filters.',
        params: schemas.spaceParams,
        querystring: schemas.barrierListQuery,
        response: { 200: schemas.barrierPage, ...errorReplies() },
      },
    }, async (request) => {
      const { state, cursor, limit } = request.query;
      return deps.store.read((tx) => barriers.listBarriers(tx, request.principal!.space.id, { states: state, cursor, limit }));
    });

    app.post('/barriers', {
      // No repeat creates here (docs/api.md "Authentication and permissions"): a barrier has no name, so there is no existing one a repeat could verify.
      config: { access: { anyOf: ['resource_config'] } },
      schema: {
        tags,
        description: 'Creates a barrier in epoch 1, WAITING. Every create makes a new barrier; the Idempotency-Key makes a retry safe.',
        params: schemas.spaceParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.barrierCreateBody,
        response: { 201: schemas.barrierView, ...errorReplies(409, 422) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-required', async (ctx) => ({ statusCode: 201, body: await barriers.createBarrier(ctx, request.body) })));

    app.get('/barriers/:id', {
      config: read,
      schema: {
        tags,
        description: 'The barrier. With waitMs, holds the reply until the barrier leaves WAITING (or leaves `epoch`), the wait ends, or the server drains.',
        params: schemas.idParams,
        querystring: schemas.barrierGetQuery,
        response: { 200: schemas.barrierView, ...errorReplies() },
      },
    }, async (request) => {
      const spaceId = request.principal!.space.id;
      const { id } = request.params;
      const { waitMs = 0, epoch } = request.query;
      const readView = () => deps.store.read((tx) => barriers.getBarrier(tx, spaceId, id));
      return longPoll(deps, topicOf('barrier', id), waitMs, readView, (view) => !stillWaiting(view, epoch));
    });

    app.post('/barriers/:id/arrive', {
      config: write,
      schema: {
        tags,
        description: 'Counts arrivalKey in the epoch; the arrival that reaches target releases the barrier. A key already counted in the epoch answers 200 with replay: true, also after release.',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.arriveBody,
        response: { 200: schemas.arriveReply, ...errorReplies(409, 422) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await barriers.arrive(ctx, request.params.id, request.body) })));

    app.post('/barriers/:id/nextEpoch', {
      config: write,
      schema: {
        tags,
        description: 'Moves a RELEASED or CANCELLED barrier to its next epoch: arrivals reset, WAITING. A WAITING barrier is 409 CONFLICT.',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.nextEpochBody,
        response: { 200: schemas.barrierView, ...errorReplies(409, 422) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await barriers.nextEpoch(ctx, request.params.id, request.body) })));

    app.post('/barriers/:id/cancel', {
      config: write,
      schema: {
        tags,
        description: 'Cancels the current epoch of a WAITING barrier. Repeating it on a CANCELLED barrier answers 200 with it; a RELEASED one is 409 CONFLICT.',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        response: { 200: schemas.barrierView, ...errorReplies(409, 422) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await barriers.cancel(ctx, request.params.id) })));
  };
}
