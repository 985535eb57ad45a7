import { allowances, schemas, topicOf, type AllowanceWaiter } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { hasPermission } from '../auth';
import type { AppDeps } from '../deps';
import { longPoll } from '../long-poll';
import { runOperation } from '../operation';
import { errorReplies } from './schema-helpers';

const read = { access: { anyOf: ['coordination_read' as const] } };
const take = { access: { anyOf: ['coordination_write' as const, 'resource_config' as const] } };
const tags = ['allowances'];

/** Shared quotas (allowances) and their waiters (docs/design/0012-allowances.md; core/src/allowances). */
export function allowanceRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();
    const space = (request: { principal?: { space: { id: string } } }): string => request.principal!.space.id;

    app.get('/allowances', { config: read, schema: { tags, params: schemas.spaceParams, querystring: schemas.listQuery, response: { 200: schemas.allowancePage, ...errorReplies() } } }, async (request) =>
      deps.store.read((tx) => allowances.listAllowances(tx, space(request), request.query.cursor, request.query.limit, deps.clock.now())),
    );

    app.post('/allowances', {
      config: { access: { anyOf: ['resource_config'], repeatCreate: true } },
      schema: {
        tags,
        description: 'Creates an allowance (201), or returns the existing one of that name when its settings are identical (200); other settings answer 409 CONFLICT.',
        params: schemas.spaceParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.allowanceCreateBody,
        response: { 200: schemas.allowanceView, 201: schemas.allowanceView, ...errorReplies(409, 422) },
      },
    }, async (request, reply) => {
      const canCreate = hasPermission(request.principal!, 'resource_config');
      return runOperation(deps, request, reply, 'key-required', async (ctx) => {
        const result = await allowances.createAllowance(ctx, request.body, canCreate);
        return { statusCode: result.created ? 201 : 200, body: result.view };
      });
    });

    app.get('/allowances/:id', { config: read, schema: { tags, params: schemas.idParams, response: { 200: schemas.allowanceView, ...errorReplies() } } }, async (request) =>
      deps.store.read((tx) => allowances.getAllowance(tx, space(request), request.params.id, deps.clock.now())),
    );

    app.post('/allowances/:id/consume', {
      config: take,
      schema: {
        tags,
        description: 'Takes units now: only when nobody waits in line, no cooldown runs and the units fit the window; otherwise 429 QUOTA_EXHAUSTED. A workKey already consumed answers 200 with that consumption (replay: true).',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.consumeBody,
        response: { 200: schemas.consumptionView, 201: schemas.consumptionView, ...errorReplies(409, 422, 429) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-required', async (ctx) => {
        const result = await allowances.consume(ctx, request.params.id, request.body);
        return { statusCode: result.replay ? 200 : 201, body: result.view };
      }),
    );

    app.post('/allowances/:id/wait', {
      config: take,
      schema: {
        tags,
        description: 'Joins the strict FIFO line: GRANTED at once when nobody waits, no cooldown runs and the units fit; WAITING otherwise, until granted, cancelled or expired (ttlSeconds, default 300).',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.waitBody,
        response: { 201: schemas.waiterView, ...errorReplies(409, 422, 429) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-required', async (ctx) => ({ statusCode: 201, body: await allowances.wait(ctx, request.params.id, request.body) })),
    );

    app.post('/allowances/:id/cooldown', {
      config: take,
      schema: {
        tags,
        description: 'Blocks consumption and grants until now + seconds; a cooldown never shortens one already running.',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.cooldownBody,
        response: { 200: schemas.allowanceView, ...errorReplies(422) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await allowances.startCooldown(ctx, request.params.id, request.body) })),
    );

    app.get('/allowance-waiters/:id', {
      config: read,
      schema: {
        tags,
        description: 'The waiter; with waitMs (capped at 30000) the reply waits until it leaves WAITING, the wait ends, or the server drains.',
        params: schemas.idParams,
        querystring: schemas.waiterQuery,
        response: { 200: schemas.waiterView, ...errorReplies() },
      },
    }, async (request) => {
      const load = (): Promise<AllowanceWaiter> => deps.store.read((tx) => allowances.getWaiter(tx, space(request), request.params.id));
      const first = await load(); // learns the allowance whose commits can move this waiter
      if (first.state !== 'WAITING' || request.query.waitMs === 0) return allowances.waiterViewOf(first);
      const waiter = await longPoll(deps, topicOf('allowance', first.allowanceId), request.query.waitMs, load, (w) => w.state !== 'WAITING');
      return allowances.waiterViewOf(waiter);
    });

    app.post('/allowance-waiters/:id/cancel', {
      config: { access: { anyOf: ['coordination_write'] } },
      schema: { tags, description: 'Leaves the line; only a WAITING waiter can (409 CONFLICT otherwise).', params: schemas.idParams, headers: schemas.idempotencyHeaders, response: { 200: schemas.waiterView, ...errorReplies(409, 422) } },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await allowances.cancelWaiter(ctx, request.params.id) })),
    );
  };
}
