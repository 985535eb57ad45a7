import type { Clock, CommitObserver, Store } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { MetricsEndpoint, Telemetry } from '../http/telemetry';
import { CensusSampler, defaultCensusOptions, type CensusOptions } from './census-sampler';
import { databaseMetrics } from './database-metrics';
import { instrumentHttp } from './http-metrics';
import { journalMetrics } from './journal-metrics';
import { createRegistry } from './registry';
import { webhookMetrics } from './webhook-metrics';
import { workMetrics } from './work-metrics';
import type { DispatchObserver } from '../webhooks/dispatcher';

export interface BatonMetricsOptions {
  /** BATON_METRICS_TOKEN: what a scrape of GET /metrics must present. */
  token: string;
  /** The store as opened (before NotifyingStore): the census reads it, and its driver tells whether it is PostgreSQL. */
  store: Store;
  clock: Clock;
  logger?: Logger;
  census?: Partial<CensusOptions>;
}

/**
 * One server's metrics: its own registry, the seams that feed it (telemetry for the routes, a
 * commit observer for NotifyingStore, the request hook) and the census sampler, which
 * createBaton starts and drainAndClose stops. Only built when BATON_METRICS_TOKEN is set.
 */
export class BatonMetrics implements MetricsEndpoint {
  readonly token: string;
  readonly registry: Registry;
  readonly telemetry: Telemetry;
  readonly observeCommit: CommitObserver;
  readonly census: CensusSampler;
  /** Handed to the webhook dispatcher. */
  readonly webhooks: DispatchObserver;

  constructor(options: BatonMetricsOptions) {
    this.token = options.token;
    this.registry = createRegistry();
    this.telemetry = workMetrics(this.registry);
    this.observeCommit = journalMetrics(this.registry);
    this.webhooks = webhookMetrics(this.registry);
    const database = databaseMetrics(options.store, this.registry);
    this.census = new CensusSampler(options.store, options.clock, this.registry, database, options.logger, { ...defaultCensusOptions, ...options.census });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }

  instrument(app: FastifyInstance): void {
    instrumentHttp(app, this.registry);
  }
}
