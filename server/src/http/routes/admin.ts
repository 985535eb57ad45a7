import { BatonError, isoFromMs, schemas, tenancy } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { issueSecret, tokensEqual } from '../../host/secrets';
import type { AppDeps } from '../deps';
import { credentialsTopic } from '../credential-cache';
import { adminListRoutes } from './admin-lists';

const orgParams = z.object({ orgId: schemas.uuidInput });
const keyParams = z.object({ keyId: schemas.uuidInput });
const tags = ['admin'];

/**
 * The operator API of docs/design/0003-operator-api.md. Without BATON_ADMIN_TOKEN every route answers 404, so an
 * unconfigured server shows no operator surface at all.
 */
export function adminRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();
    app.addHook('onRequest', async (request) => {
      if (!deps.adminToken) throw new BatonError('NOT_FOUND', `no route ${request.method} ${request.url.split('?')[0]}`);
      const given = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
      if (!given || !tokensEqual(given, deps.adminToken)) throw new BatonError('UNAUTHENTICATED', 'send Authorization: Bearer <admin token>');
    });
    // Every operator change may touch what authentication cached (a revoked key, a new plan):
    // each server's credential cache is cleared once it has committed.
    const admin = async <T>(work: (ctx: tenancy.AdminContext) => Promise<T>): Promise<T> => {
      const result = await deps.store.transaction((tx) => work({ tx, nowMs: deps.clock.now(), random: deps.random }));
      deps.notifier.notify(credentialsTopic);
      return result;
    };

    app.post('/orgs', { schema: { tags, body: schemas.orgCreateBody, response: { 201: schemas.orgView } } }, async (request, reply) => {
      const org = await admin((ctx) => tenancy.createOrg(ctx, request.body));
      return reply.code(201).send(tenancy.orgView(org));
    });

    app.put('/orgs/:orgId/plan', { schema: { tags, params: orgParams, body: schemas.planChangeBody, response: { 200: schemas.orgView } } }, async (request) =>
      tenancy.orgView(await admin((ctx) => tenancy.changePlan(ctx, request.params.orgId, request.body))));

    app.post('/orgs/:orgId/spaces', { schema: { tags, params: orgParams, body: schemas.spaceCreateBody, response: { 201: schemas.spaceView } } }, async (request, reply) => {
      const space = await admin((ctx) => tenancy.createSpace(ctx, request.params.orgId, request.body.name));
      return reply.code(201).send(tenancy.spaceView(space));
    });

    app.post('/orgs/:orgId/keys', { schema: { tags, params: orgParams, body: schemas.keyCreateBody, response: { 201: schemas.keyCreatedView } } }, async (request, reply) => {
      const { keyId, secret, secretHash } = issueSecret(deps.random);
      const key = await admin((ctx) => tenancy.createKey(ctx, request.params.orgId, request.body, keyId, secretHash));
      return reply.code(201).send({ ...tenancy.keyView(key), secret });
    });

    app.post('/keys/:keyId/revoke', { schema: { tags, params: keyParams, response: { 200: schemas.keyView } } }, async (request) =>
      tenancy.keyView(await admin((ctx) => tenancy.revokeKey(ctx, request.params.keyId))));

    app.get('/clock', { schema: { tags, response: { 200: schemas.clockView } } }, async () => ({ now: isoFromMs(deps.clock.now()), mode: deps.clock.mode }));

    app.post('/clock/advance', { schema: { tags, body: schemas.clockAdvanceBody, response: { 200: schemas.clockView } } }, async (request) => {
      if (!deps.manualClock) throw new BatonError('CONFLICT', `the clock is ${deps.clock.mode}; only a manual clock (BATON_CLOCK=manual) can be advanced`);
      deps.manualClock.advance(request.body.ms);
      // Work that fell due during the jump is done before the reply, so a test sees its effects at once.
      await deps.runDueWork();
      return { now: isoFromMs(deps.clock.now()), mode: deps.clock.mode };
    });

    adminListRoutes(plain, deps);
  };
}
