import { budgets, schemas } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { hasPermission } from '../auth';
import type { AppDeps } from '../deps';
import { runOperation } from '../operation';
import { errorReplies } from './schema-helpers';

const read = { access: { anyOf: ['coordination_read' as const] } };
const spend = { access: { anyOf: ['coordination_write' as const, 'resource_config' as const] } };
const tags = ['budgets'];

/** The budget routes (docs/api.md "Budgets"); semantics in core/src/budgets (docs/design/0007-budget-reservations.md). */
export function budgetRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();

    app.get('/budgets', {
      config: read,
      schema: { tags, params: schemas.spaceParams, querystring: schemas.listQuery, response: { 200: schemas.budgetPage, ...errorReplies() } },
    }, async (request) => deps.store.read((tx) => budgets.listBudgets(tx, request.principal!.space.id, request.query.cursor, request.query.limit)));

    app.post('/budgets', {
      config: { access: { anyOf: ['resource_config'], repeatCreate: true } },
      schema: {
        tags,
        description: 'Creates a budget (201), or returns the existing one of that name when its settings are identical (200); other settings answer 409 CONFLICT.',
        params: schemas.spaceParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.budgetCreateBody,
        response: { 200: schemas.budgetView, 201: schemas.budgetView, ...errorReplies(409, 422) },
      },
    }, async (request, reply) => {
      const canCreate = hasPermission(request.principal!, 'resource_config');
      return runOperation(deps, request, reply, 'key-required', async (ctx) => {
        const result = await budgets.createBudget(ctx, request.body, canCreate);
        return { statusCode: result.created ? 201 : 200, body: result.view };
      });
    });

    app.get('/budgets/:id', {
      config: read,
      schema: { tags, params: schemas.idParams, response: { 200: schemas.budgetView, ...errorReplies() } },
    }, async (request) => deps.store.read((tx) => budgets.getBudget(tx, request.principal!.space.id, request.params.id)));

    app.get('/budgets/:id/reservations', {
      config: read,
      schema: {
        tags,
        description: "The budget's reservations in any state, oldest first; `state=ACTIVE` or `state=SETTLED,VOIDED` filters. The budget view lists only the ACTIVE ones.",
        params: schemas.idParams,
        querystring: schemas.reservationListQuery,
        response: { 200: schemas.reservationPage, ...errorReplies() },
      },
    }, async (request) => {
      const { state, cursor, limit } = request.query;
      return deps.store.read((tx) => budgets.listReservations(tx, request.principal!.space.id, request.params.id, { states: state, cursor, limit }));
    });

    app.get('/budgets/:id/reservations/:reservationId', {
      config: read,
      schema: { tags, description: 'One reservation of the budget, in any state.', params: schemas.reservationParams, response: { 200: schemas.reservationView, ...errorReplies() } },
    }, async (request) => deps.store.read((tx) => budgets.getReservation(tx, request.principal!.space.id, request.params.id, request.params.reservationId)));

    app.post('/budgets/:id/reserve', {
      config: spend,
      schema: {
        tags,
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.reserveBody,
        response: { 201: schemas.reservationView, ...errorReplies(409, 422) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-required', async (ctx) => ({ statusCode: 201, body: await budgets.reserve(ctx, request.params.id, request.body) })));

    app.post('/budgets/:id/settle', {
      config: spend,
      schema: {
        tags,
        description: 'Settles spend against an ACTIVE reservation; idempotent per workKey (a repeat answers replay: true).',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.settleBody,
        response: { 200: schemas.entryReply, ...errorReplies(409, 422) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await budgets.settle(ctx, request.params.id, request.body) })));

    app.post('/budgets/:id/void', {
      config: spend,
      schema: {
        tags,
        description: 'Voids the unspent remainder of an ACTIVE reservation; idempotent per workKey.',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.voidBody,
        response: { 200: schemas.entryReply, ...errorReplies(409, 422) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await budgets.voidReservation(ctx, request.params.id, request.body) })));
  };
}
