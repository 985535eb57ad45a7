import { schemas, tenancy } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../deps';

const orgParams = z.object({ orgId: schemas.uuidInput });
const tags = ['admin'];
/**
 * What an operator's read can answer besides 200: a bad query (400), no or a wrong token (401),
 * no such organization or no operator API at all without BATON_ADMIN_TOKEN (404), the store out
 * of reach or a drain (503).
 */
const errors = Object.fromEntries([400, 401, 404, 503].map((s) => [s, schemas.errorEnvelope]));

/**
 * The operator's reads (decisions §11): organizations, their spaces and their keys, so that the
 * ids the other admin routes take can be found. Registered inside adminRoutes, behind its token.
 */
export function adminListRoutes(app: FastifyInstance, deps: AppDeps): void {
  const typed = app.withTypeProvider<ZodTypeProvider>();

  typed.get('/orgs', {
    schema: {
      tags,
      operationId: 'adminListOrgs',
      summary: 'List organizations',
      description: 'Every organization, oldest first, with its plan and the limits in force. Follow nextCursor for the next page.',
      querystring: schemas.adminListQuery,
      response: { 200: schemas.orgPage.describe('A page of organizations'), ...errors },
    },
  }, async (request) => deps.store.read((tx) => tenancy.listOrgs(tx, request.query)));

  typed.get('/orgs/:orgId/spaces', {
    schema: {
      tags,
      operationId: 'adminListSpaces',
      summary: 'List the spaces of an organization',
      description: 'The organization\'s spaces, oldest first. Follow nextCursor for the next page.',
      params: orgParams,
      querystring: schemas.adminListQuery,
      response: { 200: schemas.spacePage.describe('A page of spaces'), ...errors },
    },
  }, async (request) => deps.store.read((tx) => tenancy.listSpaces(tx, request.params.orgId, request.query)));

  typed.get('/orgs/:orgId/keys', {
    schema: {
      tags,
      operationId: 'adminListKeys',
      summary: 'List the API keys of an organization',
      description: 'The organization\'s keys, revoked ones too, oldest first, without secrets: Baton keeps only their hashes. With spaceId, only the keys that may use that space.',
      params: orgParams,
      querystring: schemas.keyListQuery,
      response: { 200: schemas.keyPage, ...errors },
    },
  }, async (request) => deps.store.read((tx) => tenancy.listKeys(tx, request.params.orgId, request.query)));
}
