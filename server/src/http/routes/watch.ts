import { parseWatchAggregate, parseWatchTypes, schemas, type WatchFilter } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../deps';
import { watchPoll } from '../watch-poll';
import { errorReplies } from './schema-helpers';

/** GET /watch: the events page of GET /events, filtered server-side, as a long poll (docs/api.md, "Watch"). */
export function watchRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();
    app.get('/watch', {
      config: { access: { anyOf: ['coordination_read'] } },
      schema: {
        tags: ['events'],
        description:
          'The journal after `cursor`, filtered by types, aggregate and scopeId, as a long poll: answers once a page holds a matching event, or after waitSeconds (capped at 30) with none. nextCursor is the last event examined, matching or not: follow it and no committed event is skipped.',
        params: schemas.spaceParams,
        querystring: schemas.watchQuery,
        response: { 200: schemas.eventPage, ...errorReplies() },
      },
    }, async (request, reply) => {
      const query = request.query;
      const filter: WatchFilter = {
        types: query.types === undefined ? null : parseWatchTypes(query.types),
        aggregate: query.aggregate === undefined ? null : parseWatchAggregate(query.aggregate),
        scopeId: query.scopeId ?? null,
      };
      // The response closing before it was written means the client left: stop holding the watch.
      const left = new AbortController();
      const onClose = (): void => {
        if (!reply.raw.writableFinished) left.abort();
      };
      reply.raw.on('close', onClose);
      try {
        const page = await watchPoll(deps, {
          spaceId: request.principal!.space.id, filter, cursor: query.cursor, limit: query.limit, waitMs: query.waitSeconds * 1000, signal: left.signal,
        });
        return { items: page.items, nextCursor: page.nextCursor, ...(page.truncated ? { truncated: true as const } : {}) };
      } finally {
        reply.raw.off('close', onClose);
      }
    });
  };
}
