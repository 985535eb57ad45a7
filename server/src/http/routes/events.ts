import { readEvents, schemas } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../deps';
import { errorReplies } from './schema-helpers';

export function eventRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();
    app.get('/events', {
      config: { access: { anyOf: ['coordination_read'] } },
      schema: {
        tags: ['events'],
        description: 'The space journal after `cursor`, in eventId order. Follow nextCursor: no committed event is ever skipped.',
        params: schemas.spaceParams,
        querystring: schemas.eventsQuery,
        response: { 200: schemas.eventPage, ...errorReplies() },
      },
    }, async (request) => deps.store.read((tx) => readEvents(tx, request.principal!.space.id, request.query.cursor, request.query.limit)));
  };
}
