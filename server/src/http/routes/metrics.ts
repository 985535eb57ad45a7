import { BatonError } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import { tokensEqual } from '../../host/secrets';
import type { AppDeps } from '../deps';

/**
 * GET /metrics, the Prometheus text exposition (docs/operator.md, "Metrics"). Without
 * BATON_METRICS_TOKEN it answers 404 as an unknown route does, as /admin/v1 does without its
 * token: an unconfigured server shows no operator surface.
 *
 * It is served on the API's own port behind a bearer token, rather than on a second port: one
 * port to deploy, expose and health-check, and Prometheus sends a bearer token itself
 * (`authorization` in a scrape config). The metrics name spaces and mailboxes of every tenant,
 * so they are never public. Left out of the OpenAPI document: it is not part of the API.
 */
export function metricsRoutes(deps: AppDeps) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
      const metrics = deps.metrics;
      if (!metrics) throw new BatonError('NOT_FOUND', `no route ${request.method} ${request.url.split('?')[0]}`);
      const given = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
      // Compared in constant time (as the admin token is): the time of a refusal says nothing about the token.
      if (!given || !tokensEqual(given, metrics.token)) throw new BatonError('UNAUTHENTICATED', 'send Authorization: Bearer <metrics token>');
      return reply.type(metrics.contentType).send(await metrics.render());
    });
  };
}
