import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../deps';

/** Liveness answers while the process runs; readiness goes false when draining or the store is down. */
export function healthRoutes(deps: AppDeps) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
    app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
      if (deps.drain.draining) return reply.code(503).send({ status: 'draining' });
      try {
        await deps.store.read(async (tx) => tx.orgs.count());
      } catch {
        return reply.code(503).send({ status: 'store unavailable' });
      }
      return { status: 'ready' };
    });
  };
}
