import { BatonError } from '@baton/core';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject, serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import type { AppDeps } from './deps';
import { clientErrorHandler } from './client-errors';
import { frameworkErrors, installErrorHandlers } from './error-handler';
import { installRequestLog } from './request-log';
import { installJsonParser } from './json-body';
import { documentedSchema } from './batch-items';
import { applyContract, info } from './contract/document';
import { referencePage } from './contract/reference-page';
import { adminRoutes } from './routes/admin';
import { allowanceRoutes } from './routes/allowances';
import { barrierRoutes } from './routes/barriers';
import { claimRoutes } from './routes/claims';
import { timerRoutes } from './routes/timers';
import { budgetRoutes } from './routes/budgets';
import { eventRoutes } from './routes/events';
import { watchRoutes } from './routes/watch';
import { healthRoutes } from './routes/health';
import { mailboxRoutes } from './routes/mailboxes';
import { metricsRoutes } from './routes/metrics';
import { taskRoutes } from './routes/tasks';
import { groupRoutes } from './routes/groups';
import { admissionRoutes } from './routes/admission';
import { batchRoutes } from './routes/batches';
import { limitRoutes } from './routes/limits';
import { poolRoutes } from './routes/pools';
import { destinationRoutes } from './routes/destinations';
import { diagnosticRoutes } from './routes/diagnostics';
import { spaceScope } from './space-scope';
import { installLimits } from './limit-hooks';
import { usageRoutes } from './routes/usage';
import { runRoutes } from './routes/runs';
import { consoleRoutes } from './console';

const requestIdPattern = /^[A-Za-z0-9._-]{1,128}$/;

const servedWhileDraining = new Set(['/healthz', '/readyz']);
const draining = new BatonError('UNAVAILABLE', 'the server is draining (shutting down); retry after Retry-After seconds with the same Idempotency-Key');

/** Node's HTTP timeouts; tests shorten them (a slow client's 408 in a second, not in Node's 60 to 90). */
export interface HttpTimeouts {
  /** How long a request's headers may take to arrive (Node's headersTimeout; default 60 s). */
  headersTimeoutMs?: number;
  /** How often Node looks for requests past it (connectionsCheckingInterval; default 30 s). */
  timeoutCheckIntervalMs?: number;
}

/** Builds the Fastify app over injected dependencies; `listen` is the caller's business. */
export async function buildApp(deps: AppDeps, logger: Logger | false = false, timeouts: HttpTimeouts = {}): Promise<FastifyInstance> {
  const app = Fastify({
    http: {
      ...(timeouts.headersTimeoutMs === undefined ? {} : { headersTimeout: timeouts.headersTimeoutMs }),
      ...(timeouts.timeoutCheckIntervalMs === undefined ? {} : { connectionsCheckingInterval: timeouts.timeoutCheckIntervalMs }),
    },
    loggerInstance: (logger || undefined) as FastifyBaseLogger | undefined,
    // A caller's own X-Request-Id is kept when it is sane, so traces join up across services.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && requestIdPattern.test(given) ? given : deps.random.uuid();
    },
    bodyLimit: 1024 * 1024,
    return503OnClosing: false,
    // Fastify's own two lines per request are replaced by one line from request-log.ts.
    logController: new LogController({ disableRequestLogging: true }),
    // URLs the router refuses before any route (too-long parameter, bad percent-encoding) get the envelope too.
    frameworkErrors,
    // Requests Node's parser refuses (431, 408, 400) get the envelope and an X-Request-Id too.
    clientErrorHandler: clientErrorHandler(() => deps.random.uuid()),
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
    // docs/design/0002-graceful-drain.md: a draining server takes no new call (one on a connection still open, or an
    // inject); requests already running finish. Health checks still answer: /readyz says why.
    if (deps.drain.draining && !servedWhileDraining.has(request.routeOptions.url ?? '')) throw draining;
  });
  installErrorHandlers(app);
  installJsonParser(app);
  installRequestLog(app);
  // Before any route: a hook reaches only the routes registered after it.
  deps.metrics?.instrument(app);

  await app.register(fastifySwagger, {
    openapi: {
      // 3.1 so the zod transform emits JSON Schema 2020-12 (null as a type, no `nullable`).
      openapi: '3.1.0',
      info: { title: info.title, version: info.version },
    },
    // Batch routes validate their items one by one; the document shows the items' shape (batch-items.ts).
    transform: (input) => jsonSchemaTransform({ ...input, schema: documentedSchema(input.schema) }),
    // Ids, summaries, every status and the examples (contract/): rules over the generated document.
    transformObject: (input) => applyContract(jsonSchemaTransformObject(input)),
  });
  // The rendered reference of the same document; outside /v1/spaces, so no key is needed, and
  // its routes are hidden from the document.
  await app.register(fastifySwaggerUi, referencePage);

  await app.register(healthRoutes(deps));
  await app.register(metricsRoutes(deps));
  await app.register(adminRoutes(deps), { prefix: '/admin/v1' });
  if (deps.console !== false) await app.register(consoleRoutes(deps));
  await app.register(
    async (v1) => {
      spaceScope(v1, deps);
      installLimits(v1, deps);
      await v1.register(budgetRoutes(deps));
      await v1.register(barrierRoutes(deps));
      await v1.register(claimRoutes(deps));
      await v1.register(timerRoutes(deps));
      await v1.register(poolRoutes(deps));
      await v1.register(allowanceRoutes(deps));
      await v1.register(mailboxRoutes(deps));
      await v1.register(taskRoutes(deps));
      await v1.register(admissionRoutes(deps));
      await v1.register(batchRoutes(deps));
      await v1.register(groupRoutes(deps));
      await v1.register(limitRoutes(deps));
      await v1.register(eventRoutes(deps));
      await v1.register(watchRoutes(deps));
      await v1.register(destinationRoutes(deps));
      await v1.register(diagnosticRoutes(deps));
      await v1.register(usageRoutes(deps));
      await v1.register(runRoutes(deps));
    },
    { prefix: '/v1/spaces/:spaceId' },
  );
  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  return app;
}
