import type { FastifyInstance } from 'fastify';
import { authenticate } from './auth';
import type { AppDeps } from './deps';

/**
 * Binds every /v1/spaces/{spaceId} request to its key and space before the body is parsed or
 * validated: authentication and permission come first (see auth.ts for the order).
 */
export function spaceScope(v1: FastifyInstance, deps: AppDeps): void {
  v1.addHook('onRequest', async (request) => {
    const access = request.routeOptions.config.access;
    if (!access) return; // unknown route: the not-found handler answers
    const { spaceId } = request.params as { spaceId: string };
    request.principal = await authenticate(deps.store, deps.credentials, request, spaceId, access);
  });
}
