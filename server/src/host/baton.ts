import { LocalNotifier, ManualClock, NotifyingStore, SystemClock, type Clock, type Notifier, type Random, type Store } from '@baton/core';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config';
import { buildApp } from '../http/app';
import { DrainController, type AppDeps } from '../http/deps';
import { BackgroundWork } from './background';
import { InFlightRequests } from './in-flight';
import { bootstrapDev, type DevCredentials } from './bootstrap';
import { cryptoRandom } from './crypto-random';
import { CredentialCache } from '../http/credential-cache';

export interface Baton {
  app: FastifyInstance;
  deps: AppDeps;
  background: BackgroundWork;
  devCredentials: DevCredentials | undefined;
  /**
   * SIGTERM's path (decisions §1): readiness false, long polls released, in-flight requests
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
  logger?: Logger;
  backgroundIntervalMs?: number;
  /**
   * Wakes long polls. Default: a LocalNotifier (one process: memory, PGlite, or one server).
   * Several servers on one PostgreSQL pass a PgNotifier (server/src/notify/pg-notifier.ts).
   * Whoever passes it closes it, after drainAndClose.
   */
  notifier?: Notifier;
}

/** How long a drain lets in-flight requests finish before it closes their connections. */
const drainDeadlineMs = 35_000;

/** Assembles one Baton server from its seams; used by main.ts, the tests and the benchmarks. */
export async function createBaton(options: BatonOptions): Promise<Baton> {
  const random = options.random ?? cryptoRandom;
  const drain = new DrainController();
  const notifier = options.notifier ?? new LocalNotifier(options.clock);
  // Every commit wakes the long polls waiting on what it changed (core/src/notifier.ts).
  const store = new NotifyingStore(options.store, notifier);
  const background = new BackgroundWork(store, options.clock, options.logger, random, options.backgroundIntervalMs);
  const credentials = new CredentialCache(options.clock);
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
    runDueWork: () => background.runDue(),
  };
  const devCredentials = options.bootstrap ? await bootstrapDev(store, options.clock.now(), random) : undefined;
  const app = await buildApp(deps, options.logger ?? false);
  const inFlight = new InFlightRequests();
  inFlight.attach(app.server);
  let closing: Promise<void> | undefined;
  const drainAndClose = (): Promise<void> =>
    (closing ??= (async () => {
      drain.start();
      background.stop();
      unfollow();
      const closed = app.close();
      // Long polls answer at once on drain, so in-flight requests end within a request's time;
      // then no connection left carries a request, and waiting on them would wait on clients.
      await inFlight.idle(drainDeadlineMs);
      app.server.closeAllConnections();
      await closed;
    })());
  return { app, deps, background, devCredentials, drainAndClose };
}

export function clockFor(config: Pick<Config, 'clock' | 'clockStartMs'>): Clock {
  if (config.clock === 'system') return new SystemClock();
  return new ManualClock(config.clockStartMs ?? new SystemClock().now());
}
