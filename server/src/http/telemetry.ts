import type { ResourceKind } from '@baton/core';
import type { FastifyInstance } from 'fastify';

/**
 * What the HTTP layer reports for metrics as it works. The routes call it unconditionally; a
 * server without BATON_METRICS_TOKEN gets noTelemetry, so reporting costs nothing there. The
 * implementation (server/src/metrics) is the only place that knows prom-client.
 */
export interface Telemetry {
  /** A long poll parked, waiting for a wake; the returned function is called once it stops waiting. */
  pollParked(): () => void;
  /** An admit try (admit or admit-batch, each try of its long poll) admitted nothing because resources of these kinds were short. */
  admissionBlocked(kinds: readonly ResourceKind[]): void;
}

const unpark = (): void => undefined;

export const noTelemetry: Telemetry = {
  pollParked: () => unpark,
  admissionBlocked: () => undefined,
};

/** GET /metrics as the HTTP layer sees it: set only when BATON_METRICS_TOKEN is. */
export interface MetricsEndpoint {
  /** The bearer token a scrape must present. */
  readonly token: string;
  /** The exposition format's content type. */
  readonly contentType: string;
  /** Every metric, in the Prometheus text exposition format. */
  render(): Promise<string>;
  /** Counts and times every request of `app`; called before any route is registered, so every route gets its hook. */
  instrument(app: FastifyInstance): void;
}
