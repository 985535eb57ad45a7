import { claims, schemas } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../deps';
import { runOperation } from '../operation';
import { holdingLeases } from '../claim-poll';
import { errorReplies } from './schema-helpers';

const read = { access: { anyOf: ['coordination_read' as const] } };
const write = { access: { anyOf: ['coordination_write' as const] } };
const tags = ['claims'];

/** The claim routes of docs/design/0020-claims.md; semantics in core/src/claims, choices in docs/api.md "Claims". */
export function claimRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();

    app.get('/claims', {
      config: read,
      schema: {
        tags,
        description: 'Claims oldest first; filter by claimKey, scopeId and `state=HELD` or `state=RELEASED,EXPIRED`. Never shows a token.',
        params: schemas.spaceParams,
        querystring: schemas.claimListQuery,
        response: { 200: schemas.claimPage, ...errorReplies() },
      },
    }, async (request) => {
      const { claimKey, scopeId, state, cursor, limit } = request.query;
      return deps.store.read((tx) => claims.listClaims(tx, request.principal!.space.id, { claimKey, scopeId, states: state, cursor, limit }));
    });

    app.post('/claims', {
      config: write,
      schema: {
        tags,
        description:
          'Claims claimKey: 201 with a new claim, its token and the next fencing token of the key. The same holder and holderSession holding the key live get 200 and that claim (same token); a live claim of anyone else is 409 CLAIM_HELD (details: holder, leaseExpiresAt).',
        params: schemas.spaceParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.claimCreateBody,
        response: { 200: schemas.claimGrant, 201: schemas.claimGrant, ...errorReplies(409, 422) },
      },
    }, async (request, reply) =>
      // A claim is a lease (docs/design/0016-limits-and-retry-after.md): held for the call, as a recv's.
      holdingLeases(deps, request, 1, () =>
        runOperation(deps, request, reply, 'key-required', async (ctx) => {
          const { created, grant } = await claims.acquire(ctx, request.body);
          return { statusCode: created ? 201 : 200, body: grant };
        }),
      ));

    app.get('/claims/:id', {
      config: read,
      schema: {
        tags,
        description: 'The claim (never its token).',
        params: schemas.idParams,
        response: { 200: schemas.claimView, ...errorReplies() },
      },
    }, async (request) => deps.store.read((tx) => claims.getClaim(tx, request.principal!.space.id, request.params.id)));

    app.post('/claims/:id/renew', {
      config: write,
      schema: {
        tags,
        description: 'Extends the live claim to now + leaseSeconds. A token that is not the live claim (released, expired, replaced) is 409 LEASE_LOST.',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.claimRenewBody,
        response: { 200: schemas.claimView, ...errorReplies(409, 422) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await claims.renew(ctx, request.params.id, request.body) })));

    app.post('/claims/:id/release', {
      config: write,
      schema: {
        tags,
        description: 'Releases the live claim: RELEASED, the key free at once. A token that is not the live claim (a repeat included) is 409 LEASE_LOST.',
        params: schemas.idParams,
        headers: schemas.idempotencyHeaders,
        body: schemas.claimReleaseBody,
        response: { 200: schemas.claimView, ...errorReplies(409, 422) },
      },
    }, async (request, reply) =>
      runOperation(deps, request, reply, 'key-optional', async (ctx) => ({ statusCode: 200, body: await claims.release(ctx, request.params.id, request.body) })));
  };
}
