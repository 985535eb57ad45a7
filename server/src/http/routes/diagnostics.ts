import { diagnostics, schemas } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../deps';
import { errorReplies } from './schema-helpers';

const usage = { access: { anyOf: ['usage_read' as const] } };
const tags = ['diagnostics'];

/**
 * Diagnostics (docs/design/0018-diagnostics.md; docs/api.md, "Diagnostics"): census, backlog, waits and the run
 * view, reads only (core/src/diagnostics/service.ts). Ages are measured on the service clock.
 */
export function diagnosticRoutes(deps: AppDeps) {
  return async (plain: FastifyInstance): Promise<void> => {
    const app = plain.withTypeProvider<ZodTypeProvider>();
    const space = (request: { principal?: { space: { id: string } } }): string => request.principal!.space.id;

    app.get('/diagnostics/census', {
      config: usage,
      schema: { tags, description: 'Every resource of the space by type and state; each type counted up to countCap rows (`capped` says when a count stopped there).', params: schemas.spaceParams, response: { 200: schemas.censusView, ...errorReplies() } },
    }, async (request) => deps.store.read((tx) => diagnostics.census(tx, space(request))));

    app.get('/diagnostics/backlog', {
      config: usage,
      schema: {
        tags,
        description: 'Mailboxes in name order, each with its READY, CLAIMED and DEAD counts and the age of its oldest READY message; paged (limit, cursor).',
        params: schemas.spaceParams,
        querystring: schemas.backlogQuery,
        response: { 200: schemas.backlogPage, ...errorReplies() },
      },
    }, async (request) => deps.store.read((tx) => diagnostics.backlog(tx, space(request), deps.clock.now(), request.query)));

    app.get('/diagnostics/waits', {
      config: usage,
      schema: {
        tags,
        description: 'Allowance wait lines (longest first), WAITING barriers with who arrived and how many are missing (oldest first), and tasks blocked at admission with the resources that block them (the oldest 100 READY deliveries with requirements examined).',
        params: schemas.spaceParams,
        response: { 200: schemas.waitsView, ...errorReplies() },
      },
    }, async (request) => deps.store.read((tx) => diagnostics.waits(tx, space(request), deps.clock.now())));

    app.get('/ops/runs/:scopeId', {
      config: usage,
      schema: {
        tags,
        description: 'The run view of a scopeId: counts of its tasks, task groups and reservations by state, and its PENDING and RUNNING tasks (paged) each with what it waits for. 404 when nothing lives under the scopeId.',
        params: schemas.runScopeParams,
        querystring: schemas.runOpsQuery,
        response: { 200: schemas.runOpsView, ...errorReplies() },
      },
    }, async (request) => deps.store.read((tx) => diagnostics.runView(tx, space(request), request.params.scopeId, deps.clock.now(), request.query)));
  };
}
