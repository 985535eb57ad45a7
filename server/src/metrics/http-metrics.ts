import type { FastifyInstance } from 'fastify';
import { Counter, Histogram, type Registry } from 'prom-client';
import { methodLabel, routeLabel } from './route';

/**
 * Buckets of request latency, in seconds: milliseconds for the hot path, up to the 30 s a long
 * poll may wait (recv and admit with waitMs spend most of their time parked, by design).
 */
const durationBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * Counts every response by route pattern, method and status, and times it by route and method
 * (no status: a histogram's series are its buckets times its labels, and the latency of errors
 * is seldom what one looks for). Read from the response's own timing, after it is sent, so a
 * request pays a few map lookups and no I/O.
 */
export function instrumentHttp(app: FastifyInstance, registry: Registry): void {
  const requests = new Counter({
    name: 'baton_http_requests_total',
    help: 'HTTP requests answered, by route pattern, method and status code.',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'baton_http_request_duration_seconds',
    help: 'Time from request to response, by route pattern and method; long polls include their wait.',
    labelNames: ['route', 'method'] as const,
    buckets: durationBuckets,
    registers: [registry],
  });
  app.addHook('onResponse', async (request, reply) => {
    const route = routeLabel(request);
    const method = methodLabel(request.method);
    requests.inc({ route, method, status: String(reply.statusCode) });
    duration.observe({ route, method }, reply.elapsedTime / 1000);
  });
}
