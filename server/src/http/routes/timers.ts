import { schemas, timers } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../deps';
import { runOperation } from '../operation';
import { errorReplies } from './schema-helpers';

const read = { access: { anyOf: ['coordination_read' as const] } };
const write = { access: { anyOf: ['coordination_write' as const] } };
const tags = ['timers'];

/** The timer routes of docs/design/0021-timers.md; semantics in core/src/timers, choices in docs/api.md ("Timers"). */
export function timerRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();

    app.post('/timers', {
      config: write,
      schema: {
        tags,
        description:
          'Arms a timer (201, ARMED): once the service clock passes fireAt, the background sweep sends payload to the mailbox, once, as a message with workKey timer:<id>. ' +
          'The same timerKey with the same body answers 200 with the timer (in any state); another body 409 CONFLICT. 404 for an unknown mailbox; 413 PAYLOAD_TOO_LARGE above the space\'s maxPayloadBytes; ' +
          '429 BACKLOG_FULL when the space holds maxArmedTimers ARMED timers.',
        params: schemas.spaceParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.timerArmBody,
        response: { 200: schemas.timerView, 201: schemas.timerView, ...errorReplies(409, 413, 422, 429) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-required', async (ctx) => {
        const result = await timers.arm(ctx, request.body);
        return { statusCode: result.created ? 201 : 200, body: result.view };
      }));

    app.get('/timers', {
      config: read,
      schema: {
        tags,
        description: 'Timers oldest first (by createdAt); `state=ARMED` or `state=ARMED,FIRED` and `scopeId` filter.',
        params: schemas.spaceParams,
        querystring: schemas.timerListQuery,
        response: { 200: schemas.timerPage, ...errorReplies() },
      },
    }, async (request) => {
      const { state, scopeId, cursor, limit } = request.query;
      return deps.store.read((tx) => timers.listTimers(tx, request.principal!.space.id, { states: state, scopeId, cursor, limit }));
    });

    app.get('/timers/:id', {
      config: read,
      schema: { tags, description: 'The timer.', params: schemas.idParams, response: { 200: schemas.timerView, ...errorReplies() } },
    }, async (request) => deps.store.read((tx) => timers.getTimer(tx, request.principal!.space.id, request.params.id)));

    app.post('/timers/:id/cancel', {
      config: write,
      schema: {
        tags,
        description: 'Cancels an ARMED timer: it will not fire. Repeating it on a CANCELLED timer answers 200 with it; a FIRED one is 409 CONFLICT.',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        response: { 200: schemas.timerView, ...errorReplies(409, 422) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await timers.cancel(ctx, request.params.id) })));
  };
}
