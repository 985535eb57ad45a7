import { setMaxListeners } from 'node:events';
import type { Clock, ManualClock, Notifier, Random, Store } from '@baton/core';
import type { CredentialCache } from './credential-cache';
import type { MetricsEndpoint, Telemetry } from './telemetry';
import type { Limits } from '../limits/limits';
import type { StoreOutage } from '../store/store-outage';

/** Draining state shared by readiness and (later) every long poll. */
export interface Drain {
  readonly draining: boolean;
  /** Aborts when draining starts: long polls listen to it and return their empty reply at once. */
  readonly signal: AbortSignal;
}

/** What the HTTP layer is built from: every seam injected, nothing global. */
export interface AppDeps {
  store: Store;
  /** Wakes long polls after commits; the store above notifies it. */
  notifier: Notifier;
  clock: Clock;
  /** Set when the server runs on a manual clock (BATON_CLOCK=manual): the admin clock endpoint moves it. */
  manualClock?: ManualClock;
  random: Random;
  /** Verified keys for a few seconds; cleared on every credentials change (credential-cache.ts). */
  credentials: CredentialCache;
  drain: Drain;
  /** Operator token for /admin/v1; without one those routes answer 404. */
  adminToken?: string;
  /** Runs time-based work that is due now (overdue reservations, later leases and waiters). */
  runDueWork(): Promise<void>;
  /** A run's cancel left cascades to finish: the started background loop runs them now, not at its next interval. */
  cascadeSoon(): void;
  /** Where the routes report parked polls and blocked admissions; noTelemetry without metrics. */
  telemetry: Telemetry;
  /** Webhook settings the routes need: no key refuses destination creation; allowPrivate relaxes the URL check. */
  webhooks: { secretKey: Buffer | undefined; allowPrivate: boolean };
  /** Request rates, operations and plan limits, decided in memory (server/src/limits/). */
  limits: Limits;
  /** GET /metrics; unset (that route answers 404) without BATON_METRICS_TOKEN. */
  metrics?: MetricsEndpoint;
  /** Whether the store can be reached, as `store` saw it last (/readyz says why not). */
  storeOutage: StoreOutage;
  /** The operator console at /console; on unless false (BATON_CONSOLE=off). */
  console?: boolean;
}

export class DrainController implements Drain {
  private readonly controller = new AbortController();
  constructor() {
    // Every parked long poll listens for the drain: thousands at once are normal, not a leak.
    setMaxListeners(0, this.controller.signal);
  }
  get draining(): boolean {
    return this.controller.signal.aborted;
  }
  get signal(): AbortSignal {
    return this.controller.signal;
  }
  start(): void {
    this.controller.abort();
  }
}
