import { LocalNotifier, ManualClock, NotifyingStore, SystemClock, type Clock, type Notifier, type Plan, type Random, type Store } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config';
import { buildApp, type HttpTimeouts } from '../http/app';
import { DrainController, type AppDeps } from '../http/deps';
import { BackgroundWork } from './background';
import { defaultDispatcherOptions, WebhookDispatcher, type DispatcherOptions } from '../webhooks/dispatcher';
import { InFlightRequests } from './in-flight';
import { bootstrapDev, type DevCredentials } from './bootstrap';
import { cryptoRandom } from './crypto-random';
import { CredentialCache } from '../http/credential-cache';
import { noTelemetry } from '../http/telemetry';
import { BatonMetrics } from '../metrics/baton-metrics';
import type { CensusOptions } from '../metrics/census-sampler';
import { Limits } from '../limits/limits';
import { StoreOutage } from '../store/store-outage';
import { defaultSyncIntervalMs, LimitsSync } from '../limits/limits-sync';

export interface Baton {
  app: FastifyInstance;
  deps: AppDeps;
  background: BackgroundWork;
  /** Webhook delivery (server/src/webhooks/dispatcher.ts): main.ts starts its timer; runDueWork runs it once. */
  webhooks: WebhookDispatcher;
  /**
   * Publishes this server's request counts and operations and reads the other servers' (see
   * docs/design/0016-limits-and-retry-after.md): main.ts starts its timer; runDueWork runs it once; drainAndClose runs it a last time.
   */
  limitsSync: LimitsSync;
  devCredentials: DevCredentials | undefined;
  /** Set with a metrics token: the registry behind GET /metrics and its census sampler (sampleNow, for tests). */
  metrics: BatonMetrics | undefined;
  /**
   * SIGTERM's path (docs/design/0002-graceful-drain.md): readiness false, long polls released, in-flight requests
   * finish. The store stays open: whoever opened it closes it.
   */
  drainAndClose(): Promise<void>;
}

export interface BatonOptions {
  store: Store;
  clock: Clock;
  random?: Random;
  adminToken?: string;
  bootstrap?: boolean;
  /** The bootstrap organization's plan (BATON_BOOTSTRAP_PLAN); ENTERPRISE with no caps by default. */
  bootstrapPlan?: Plan;
  logger?: Logger;
  backgroundIntervalMs?: number;
  /**
   * Wakes long polls. Default: a LocalNotifier (one process: memory, PGlite, or one server).
   * Several servers on one PostgreSQL pass a PgNotifier (server/src/notify/pg-notifier.ts).
   * Whoever passes it closes it, after drainAndClose.
   */
  notifier?: Notifier;
  /** BATON_METRICS_TOKEN: enables GET /metrics (404 without it) and the census sampler. */
  metricsToken?: string;
  /** BATON_CONSOLE: the operator console at /console; on unless false. */
  console?: boolean;
  /** The census sampler's interval and caps; defaults in census-sampler.ts. */
  metricsCensus?: Partial<CensusOptions>;
  /** Webhooks: BATON_SECRET_KEY, BATON_WEBHOOK_ALLOW_PRIVATE, and (tests) shorter timeouts or schedules. */
  webhooks?: Partial<DispatcherOptions>;
  /**
   * The limits this server enforces, fresh for each server (they count in memory). Default a new
   * Limits; the simulator passes one with a known bug in it (sim/src/bugs/limits.ts).
   */
  limits?: Limits;
  /** How often the limits sync runs once started (limits-sync.ts); tests shorten it. */
  limitsSyncIntervalMs?: number;
  /**
   * Real time: what the background loops (sweeps, limits sync, webhook interval) and the
   * credential cache's expiry are timed by, whatever `clock` is (docs/design/0023-service-clock.md: the manual clock
   * moves only what depends on time). Default the wall clock; the simulator passes its virtual
   * clock so a run stays a function of its seed.
   */
  realTime?: Clock;
  /** Node's header timeout and how often it is checked; tests shorten them (app.ts). */
  http?: HttpTimeouts;
}

/** How long a drain lets in-flight requests finish before it closes their connections. */
const drainDeadlineMs = 35_000;

/** Assembles one Baton server from its seams; used by main.ts, the tests and the benchmarks. */
export async function createBaton(options: BatonOptions): Promise<Baton> {
  const random = options.random ?? cryptoRandom;
  const drain = new DrainController();
  const notifier = options.notifier ?? new LocalNotifier(options.clock);
  // Without a metrics token nothing is measured: no registry, no hook, no sampler.
  const metrics = options.metricsToken
    ? new BatonMetrics({ token: options.metricsToken, store: options.store, clock: options.clock, logger: options.logger, census: options.metricsCensus })
    : undefined;
  // Every commit wakes the long polls waiting on what it changed (core/src/notifier.ts), and
  // hands its events to the metrics, which count from them.
  // Every call the server makes to the store tells whether it can be reached (store-outage.ts):
  // an outage is logged once, and /readyz says why.
  const storeOutage = new StoreOutage(options.logger);
  const store = new NotifyingStore(storeOutage.watch(options.store), notifier, metrics?.observeCommit);
  const realTime = options.realTime ?? new SystemClock();
  const background = new BackgroundWork(store, options.clock, options.logger, random, options.backgroundIntervalMs, realTime);
  const webhookOptions: DispatcherOptions = { secretKey: undefined, allowPrivate: false, ...defaultDispatcherOptions, observer: metrics?.webhooks, ...options.webhooks };
  const webhooks = new WebhookDispatcher(store, options.clock, random, options.logger, webhookOptions, notifier, realTime);
  const limits = options.limits ?? new Limits();
  // A server's id only tells its request counts apart from the other servers'; a restart is a new server.
  const limitsSync = new LimitsSync(store, options.clock, random.uuid(), limits.rate, limits.ledger, options.logger, options.limitsSyncIntervalMs ?? defaultSyncIntervalMs, realTime);
  const credentials = new CredentialCache(realTime);
  const unfollow = credentials.follow(notifier);
  const deps: AppDeps = {
    store,
    notifier,
    clock: options.clock,
    manualClock: options.clock instanceof ManualClock ? options.clock : undefined,
    random,
    credentials,
    drain,
    adminToken: options.adminToken,
    cascadeSoon: () => background.cascadeSoon(),
    runDueWork: async () => {
      await background.runDue();
      await webhooks.runDue();
      await limitsSync.sync();
    },
    limits,
    webhooks: { secretKey: webhookOptions.secretKey, allowPrivate: webhookOptions.allowPrivate },
    telemetry: metrics?.telemetry ?? noTelemetry,
    metrics,
    storeOutage,
    console: options.console,
  };
  const devCredentials = options.bootstrap ? await bootstrapDev(store, options.clock.now(), random, options.bootstrapPlan) : undefined;
  const app = await buildApp(deps, options.logger ?? false, options.http);
  const inFlight = new InFlightRequests();
  inFlight.attach(app.server);
  // Samples with the server's life: from here until drainAndClose (its timer never holds the process).
  metrics?.census.start();
  let closing: Promise<void> | undefined;
  const drainAndClose = (): Promise<void> =>
    (closing ??= (async () => {
      drain.start();
      background.stop();
      const webhooksStopped = webhooks.stop();
      // Stopped first and awaited last: no census read is left running on a store about to close.
      const censusStopped = metrics?.census.stop();
      unfollow();
      const closed = app.close();
      // Long polls answer at once on drain, so in-flight requests end within a request's time;
      // then no connection left carries a request, and waiting on them would wait on clients.
      await inFlight.idle(drainDeadlineMs);
      app.server.closeAllConnections();
      await closed;
      // After the last request: every operation it counted reaches the store.
      await limitsSync.stop().catch((err: unknown) => options.logger?.error({ err }, 'last limits sync failed; up to one interval of operations is not counted'));
      await censusStopped;
      await webhooksStopped;
    })());
  return { app, deps, background, webhooks, limitsSync, devCredentials, metrics, drainAndClose };
}

export function clockFor(config: Pick<Config, 'clock' | 'clockStartMs'>): Clock {
  if (config.clock === 'system') return new SystemClock();
  return new ManualClock(config.clockStartMs ?? new SystemClock().now());
}
