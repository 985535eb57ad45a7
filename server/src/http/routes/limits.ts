import { schemas, spaceLimits, updateSpaceLimits } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../deps';
import { runOperation } from '../operation';
import { credentialsTopic } from '../credential-cache';
import { errorReplies } from './schema-helpers';

const tags = ['limits'];

/** GET and PUT /limits: the per-space limits (docs/api.md "Space limits"; core/src/tenancy/space-limits.ts). */
export function limitRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();

    app.get('/limits', {
      config: { access: { anyOf: ['usage_read'] } },
      schema: { tags, description: 'The limits in force in this space: what PUT /limits set, else the defaults.', params: schemas.spaceParams, response: { 200: schemas.spaceLimitsView, ...errorReplies() } },
    }, async (request) => spaceLimits(request.principal!.space, request.principal!.org));

    app.put('/limits', {
      config: { access: { anyOf: ['resource_config'] } },
      schema: {
        tags,
        description: 'Sets the limits named in the body (the others stay); answers every limit in force. A value above the plan ceiling is 403 ENTITLEMENT_EXCEEDED and sets nothing.',
        params: schemas.spaceParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.spaceLimitsBody,
        response: { 200: schemas.spaceLimitsView, ...errorReplies(422) },
      },
    }, async (request, reply) => {
      const sent = await runOperation(deps, request, reply, 'key-optional', async (ctx) => ({
        statusCode: 200,
        body: await updateSpaceLimits(ctx, request.principal!.space, request.principal!.org, request.body),
      }));
      // The space's limits travel with the cached credential (credential-cache.ts).
      deps.notifier.notify(credentialsTopic);
      return sent;
    });
  };
}
