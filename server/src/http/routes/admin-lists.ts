import { schemas, tenancy } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../deps';

const orgParams = z.object({ orgId: schemas.uuidInput });
const tags = ['admin'];
/**
 * The operator's reads (docs/design/0003-operator-api.md): organizations, their spaces and their keys, so that the
 * ids the other admin routes take can be found. Registered inside adminRoutes, behind its token.
 * Their operationIds, summaries and error replies come from the contract table
 * (contract/operations.ts), as every route's do.
 */
export function adminListRoutes(app: FastifyInstance, deps: AppDeps): void {
  const typed = app.withTypeProvider<ZodTypeProvider>();

  typed.get('/orgs', {
    schema: {
      tags,
      description: 'Every organization, oldest first, with its plan and the limits in force. Follow nextCursor for the next page.',
      querystring: schemas.adminListQuery,
      response: { 200: schemas.orgPage.describe('A page of organizations') },
    },
  }, async (request) => deps.store.read((tx) => tenancy.listOrgs(tx, request.query)));

  typed.get('/orgs/:orgId/spaces', {
    schema: {
      tags,
      description: 'The organization\'s spaces, oldest first. Follow nextCursor for the next page.',
      params: orgParams,
      querystring: schemas.adminListQuery,
      response: { 200: schemas.spacePage.describe('A page of spaces') },
    },
  }, async (request) => deps.store.read((tx) => tenancy.listSpaces(tx, request.params.orgId, request.query)));

  typed.get('/orgs/:orgId/keys', {
    schema: {
      tags,
      description: 'The organization\'s keys, revoked ones too, oldest first, without secrets: Baton keeps only their hashes. With spaceId, only the keys that may use that space.',
      params: orgParams,
      querystring: schemas.keyListQuery,
      response: { 200: schemas.keyPage },
    },
  }, async (request) => deps.store.read((tx) => tenancy.listKeys(tx, request.params.orgId, request.query)));
}
