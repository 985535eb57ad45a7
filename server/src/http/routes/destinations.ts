import { BatonError, conflict, destinations, schemas } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { hasPermission } from '../auth';
import type { AppDeps } from '../deps';
import { attemptOperation, runOperation, sendOutcome } from '../operation';
import { errorReplies } from './schema-helpers';
import { newSigningSecret, seal, unseal } from '../../webhooks/seal';
import { blockedRule, hostOf } from '../../webhooks/ssrf';
import { isIP } from 'node:net';

const config = { access: { anyOf: ['resource_config' as const] } };
const read = { access: { anyOf: ['coordination_read' as const, 'resource_config' as const] } };
const usage = { access: { anyOf: ['usage_read' as const] } };

/**
 * Webhook destinations and the delivery audit (docs/api.md, "Webhooks"). The signing secret is
 * made and sealed here, shown once in the create reply, and never again: views leave it out.
 * Delivery itself is server/src/webhooks/dispatcher.ts.
 */
export function destinationRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();

    app.post('/destinations', {
      config,
      schema: {
        tags: ['webhooks'],
        description:
          'Registers a webhook destination (201): the reply carries signingSecret, shown only here. The url must start with http:// or https://; a host that is a literal private, loopback or link-local address is refused (400) unless the server allows private addresses; names are checked again at every connect.',
        params: schemas.spaceParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.destinationCreateBody,
        response: { 201: schemas.destinationCreated, ...errorReplies(409, 422) },
      },
    }, async (request, reply) => {
      const key = deps.webhooks.secretKey;
      if (!key) throw conflict('webhook destinations need BATON_SECRET_KEY on the server (it seals signing secrets); ask the operator to set it');
      const host = hostOf(request.body.url);
      const rule = isIP(host) !== 0 && !deps.webhooks.allowPrivate ? blockedRule(host) : undefined;
      if (rule) {
        const message = `host ${host} is a ${rule} address: refused unless the server sets BATON_WEBHOOK_ALLOW_PRIVATE=1`;
        throw new BatonError('VALIDATION_FAILED', `url: ${message}`, [{ path: 'url', message }]);
      }
      const spaceId = request.principal!.space.id;
      // The reply stored for idempotent replay holds the secret sealed, as the row does; it is
      // opened only on the way out, so a replay answers the same secret and a dump shows neither.
      const outcome = await attemptOperation(deps, request, 'key-required', async (ctx) => {
        const secret = newSigningSecret(ctx.random);
        let sealedSigningSecret = '';
        const view = await destinations.createDestination(ctx, request.body, (id) => (sealedSigningSecret = seal(key, ctx.spaceId, id, secret)));
        return { statusCode: 201, body: { ...view, sealedSigningSecret } };
      });
      if (outcome.statusCode !== 201) return sendOutcome(reply, outcome);
      const { sealedSigningSecret, ...view } = outcome.body as schemas.DestinationView & { sealedSigningSecret: string };
      return sendOutcome(reply, { ...outcome, body: { ...view, signingSecret: unseal(key, spaceId, view.id, sealedSigningSecret) } });
    });

    app.get('/destinations', {
      config: read,
      schema: { tags: ['webhooks'], params: schemas.spaceParams, querystring: schemas.listQuery, response: { 200: schemas.destinationPage, ...errorReplies() } },
    }, async (request) => deps.store.read((tx) => destinations.listDestinations(tx, request.principal!.space.id, request.query.cursor, request.query.limit)));

    app.get('/destinations/:id', {
      config: read,
      schema: { tags: ['webhooks'], params: schemas.idParams, response: { 200: schemas.destinationView, ...errorReplies() } },
    }, async (request) => deps.store.read((tx) => destinations.getDestination(tx, request.principal!.space.id, request.params.id)));

    app.delete('/destinations/:id', {
      config,
      schema: {
        tags: ['webhooks'],
        description: 'Deletes the destination (200, its last view); delivery stops. Its attempts stay in GET /deliveries.',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        response: { 200: schemas.destinationView, ...errorReplies() },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await destinations.deleteDestination(ctx, request.params.id) })));

    app.post('/destinations/:id/resume', {
      config,
      schema: {
        tags: ['webhooks'],
        description: 'A PAUSED destination becomes ACTIVE and is tried again at once, from the event it stopped at (200). Not PAUSED: 409.',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        response: { 200: schemas.destinationView, ...errorReplies(409) },
      },
    }, async (request, reply) => {
      const canConfigure = hasPermission(request.principal!, 'resource_config');
      return runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await destinations.resumeDestination(ctx, request.params.id, canConfigure) }));
    });

    app.get('/deliveries', {
      config: usage,
      schema: {
        tags: ['webhooks'],
        description: 'One row per delivery attempt, most recent first; filter by destinationId, eventId, status.',
        params: schemas.spaceParams,
        querystring: schemas.deliveriesQuery,
        response: { 200: schemas.deliveryAttemptPage, ...errorReplies() },
      },
    }, async (request) => {
      const { destinationId, eventId, status, cursor, limit } = request.query;
      const filter = { ...(destinationId === undefined ? {} : { destinationId }), ...(eventId === undefined ? {} : { eventId }), ...(status === undefined ? {} : { status }) };
      return deps.store.read((tx) => destinations.listDeliveries(tx, request.principal!.space.id, filter, cursor, limit));
    });
  };
}
