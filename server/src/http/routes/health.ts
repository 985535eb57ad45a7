import { StoreUnavailable } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../deps';

/**
 * Liveness answers while the process runs. Readiness goes false when draining or when the store
 * cannot be reached, and says why: `reason` is StoreUnavailable's few words (no host, no SQL), and
 * `since` when the outage began, as the server's calls to the store saw it (store-outage.ts).
 */
export function healthRoutes(deps: AppDeps) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
    app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
      if (deps.drain.draining) return reply.code(503).send({ status: 'draining', reason: 'the server is shutting down' });
      try {
        await deps.store.read(async (tx) => tx.orgs.count());
      } catch (error) {
        if (!(error instanceof StoreUnavailable)) request.log.error({ err: error }, 'readiness check failed');
        const reason = error instanceof StoreUnavailable ? error.reason : 'the store failed the readiness check (see the log)';
        const since = deps.storeOutage.state?.sinceMs;
        return reply.code(503).send({ status: 'store unavailable', reason, ...(since === undefined ? {} : { since: new Date(since).toISOString() }) });
      }
      return { status: 'ready' };
    });
  };
}
