import { assert, eventTypeSet, StoreUnavailable, spaceTopic, SystemClock, type Notifier, eventView, typeMatches, together, type Clock, type DeliveryAttempt, type Destination, type DispatchProgress, type JournalEvent, type Random, type Store } from '@baton/core';
import type { Logger } from 'pino';
import { horizonRecheckDelaysMs } from '../notify/horizon-rechecks';
import { attemptDelivery, type AttemptOptions, type AttemptResult } from './http-attempt';
import { defaultRetrySchedule, retryDelayMs, type RetrySchedule } from './retry-schedule';
import { SealError, unseal } from './seal';
import { signedHeaders } from './sign';

export interface DispatcherOptions {
  /** BATON_SECRET_KEY; without it no destination exists to dispatch (creation is refused). */
  secretKey: Buffer | undefined;
  /** BATON_WEBHOOK_ALLOW_PRIVATE=1. */
  allowPrivate: boolean;
  /** Per attempt, connect to end of reply. */
  timeoutMs: number;
  schedule: RetrySchedule;
  /** Destinations one run claims. */
  claimLimit: number;
  /** Deliveries one claim attempts before it lets go (events passed over by the filter do not count). */
  eventsPerClaim: number;
  intervalMs: number;
  /**
   * Sends one signed attempt: HTTP with the SSRF guard (http-attempt.ts) unless replaced. The
   * simulator replaces it with a receiver behind its faulty network, on virtual time.
   */
  deliver?: (url: string, headers: Record<string, string>, body: string, options: AttemptOptions) => Promise<AttemptResult>;
  /** Told of every attempt (server/src/metrics/webhook-metrics.ts); nothing when metrics are off. */
  observer?: DispatchObserver;
}

/** What the dispatcher reports of its work, for metrics. */
export interface DispatchObserver {
  /** One attempt ended; `lagMs` (event committed to receiver's 2xx) only when it succeeded. */
  attempted(outcome: 'succeeded' | 'failed', durationMs: number, lagMs: number | null): void;
  /** A destination was paused by this server (failing too long, or its secret does not open). */
  paused(): void;
}

export const defaultDispatcherOptions: Omit<DispatcherOptions, 'secretKey' | 'allowPrivate'> = {
  timeoutMs: 10_000,
  schedule: defaultRetrySchedule,
  claimLimit: 50,
  eventsPerClaim: 100,
  intervalMs: 1_000,
};

const journalPageSize = 500;

/** A destination catching up on a long journal reads this much per claim, about once a second. */
const maxEventsReadPerClaim = 5_000;

/** A space whose destinations this server has not claimed for this long stops waking it (it still runs every interval). */
const followForMs = 5 * 60_000;

/**
 * Delivers each destination's events in journal order, at least once (docs/api.md, "Webhooks").
 *
 * Each destination follows its space's journal by a cursor of its own (no outbox row per event:
 * the request path writes nothing for webhooks), read with the store's horizon reader, so no
 * committed event is skipped. A run claims due destinations under a lease (claimDue: SKIP
 * LOCKED on SQL), so servers sharing a database each take different ones; every attempt's audit
 * row and the cursor it moves commit together, and only while the lease still holds. After a
 * crash or an expired lease another dispatcher resumes from the last committed cursor: the
 * event in flight may be sent twice (at least once), never skipped.
 *
 * Started (main.ts), it runs every interval and also as soon as a space it dispatches for
 * commits an event (the space's watch topic, from any server through the notifier), so a
 * delivery follows its commit within milliseconds rather than up to an interval later
 * (docs/benchmarks.md, "Watch and webhook latency"). Wakes arriving during a run fold into one
 * more run. On PostgreSQL the notification can come before the event passes the journal's
 * horizon; a woken run that read nothing re-runs on the quick part of the horizon schedule
 * (5 ms doubling to 640 ms) rather than waiting for the next commit or interval (measured: up to
 * 1 s of lag while another transaction held the horizon).
 */
export class WebhookDispatcher {
  private cancel: (() => void) | undefined;
  private stopped = true;
  private running: Promise<void> | undefined;
  /** The started loop's run in progress, and whether a wake came during it. */
  private looping = false;
  private wokenDuringRun = false;
  /** Journal events read by runs so far: a woken run that read none may be ahead of the horizon. */
  private eventsRead = 0;
  /** Spaces this server dispatched for lately: their commits wake the loop. */
  private readonly followed = new Map<string, { unsubscribe: () => void; claimedAtMs: number }>();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly random: Random,
    private readonly logger: Logger | undefined,
    private readonly options: DispatcherOptions,
    /** Wakes the started loop on commits; runs driven by runDue alone (tests, the simulator) need none. */
    private readonly notifier?: Notifier,
    /**
     * What the loop's interval and the following of spaces are timed by: real time, not the
     * service clock (docs/design/0023-service-clock.md). Due attempts, leases and retries stay on `clock`.
     */
    private readonly realTime: Clock = new SystemClock(),
  ) {}

  /** Runs at once (catching up what came while no server ran), then every interval and on wakes. */
  start(): void {
    this.stopped = false;
    this.loop(undefined);
  }

  /** Stops the timer and the wakes, and waits for a run in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.cancel?.();
    for (const { unsubscribe } of this.followed.values()) unsubscribe();
    this.followed.clear();
    await this.running?.catch(() => undefined);
  }

  /** One run: claims the destinations due now and dispatches them side by side. */
  runDue(): Promise<void> {
    const run = this.runOnce();
    this.running = run;
    return run;
  }

  private async runOnce(): Promise<void> {
    const key = this.options.secretKey;
    if (!key) return;
    const nowMs = this.clock.now();
    const token = this.random.uuid();
    const claimed = await this.store.transaction((tx) => tx.destinations.claimDue(nowMs, token, nowMs + this.leaseMs, this.options.claimLimit));
    this.follow(claimed.map((d) => d.spaceId), this.realTime.now());
    await Promise.all(
      claimed.map((d) =>
        this.dispatch(key, d, token).catch((err: unknown) => this.logger?.error({ err, destinationId: d.id }, 'webhook dispatch failed; the lease lets go when it expires')),
      ),
    );
  }

  /**
   * How long a claim holds without news: a read, an attempt cut off at its timeout, and the
   * commit, twice over. Each delivered event renews it, so a long backlog keeps its dispatcher,
   * and one that dies lets go within 25 s (10 s attempts): a shorter lease risks a second
   * dispatcher sending while the first waits on a slow receiver (a duplicate, not a loss).
   */
  private get leaseMs(): number {
    return 2 * this.options.timeoutMs + 5_000;
  }

  /** Subscribes to the commits of spaces just claimed for, and drops those not claimed for a while. */
  private follow(spaceIds: readonly string[], nowMs: number): void {
    // Also when not started (runDue alone): the subscriptions then wake nothing, and stop() ends them.
    if (this.notifier === undefined) return;
    for (const spaceId of spaceIds) {
      const followed = this.followed.get(spaceId);
      if (followed) followed.claimedAtMs = nowMs;
      else this.followed.set(spaceId, { unsubscribe: this.notifier.subscribe(spaceTopic(spaceId), this.wake), claimedAtMs: nowMs });
    }
    for (const [spaceId, { unsubscribe, claimedAtMs }] of this.followed) {
      if (nowMs - claimedAtMs > followForMs) (unsubscribe(), this.followed.delete(spaceId));
    }
  }

  /** A followed space committed: run now, or once more after the run in progress. */
  private readonly wake = (): void => {
    if (this.stopped) return;
    if (this.looping) {
      this.wokenDuringRun = true;
      return;
    }
    this.cancel?.();
    this.loop(0);
  };

  private async dispatch(key: Buffer, d: Destination, token: string): Promise<void> {
    assert(d.leaseToken === token, `destination ${d.id} claimed without our lease`);
    let secret: string;
    try {
      secret = unseal(key, d.spaceId, d.id, d.sealedSecret);
    } catch (err) {
      if (!(err instanceof SealError)) throw err;
      // Another BATON_SECRET_KEY than the one that sealed it: no attempt can be signed. Paused,
      // so the operator sees why in the view instead of a silent stall.
      const nowMs = this.clock.now();
      const paused = { ...progressOf(d), state: 'PAUSED' as const, pausedAt: nowMs, pausedReason: err.message, lastError: err.message, leaseExpiresAt: null, leaseToken: null, updatedAt: nowMs };
      if (await this.store.transaction((tx) => tx.destinations.settle(d.spaceId, d.id, token, paused))) this.options.observer?.paused();
      return;
    }
    let progress: DispatchProgress = progressOf(d);
    // Deliveries are bounded by eventsPerClaim; events passed over (older than the destination,
    // or of other types) cost only the read, so more of them are read per claim.
    let delivered = 0;
    let read = 0;
    // [] takes every type (null to typeMatches).
    const types = d.eventTypes.length === 0 ? null : eventTypeSet(d.eventTypes);
    while (delivered < this.options.eventsPerClaim && read < maxEventsReadPerClaim) {
      const events = await this.store.read((tx) => tx.events.listAfter(d.spaceId, progress.cursor, journalPageSize));
      if (events.length === 0) break;
      read += events.length;
      this.eventsRead += events.length;
      for (const event of events) {
        if (event.occurredAt < d.createdAt || !typeMatches(types, event.type)) {
          progress = { ...progress, cursor: event.eventId };
          continue;
        }
        delivered++;
        const result = await this.send(secret, event, d.url);
        const next = this.afterAttempt(d, progress, event, result);
        const kept = await this.store
          .transaction(async (tx) => {
            const [, settled] = await together(tx.deliveryAttempts.insert(next.attempt), tx.destinations.settle(d.spaceId, d.id, token, next.progress));
            // The lease went (expired and taken, or the destination deleted): record nothing.
            if (!settled) throw new LeaseLost();
            return true;
          })
          .catch((err: unknown) => {
            if (err instanceof LeaseLost) return false;
            throw err;
          });
        if (!kept) return;
        this.observe(result, event, next.progress);
        if (!result.ok) return;
        progress = next.progress;
        if (delivered >= this.options.eventsPerClaim) break;
      }
    }
    // Caught up (or done for this claim): due again at once, lease released.
    const nowMs = this.clock.now();
    await this.store.transaction((tx) =>
      tx.destinations.settle(d.spaceId, d.id, token, { ...progress, nextAttemptAt: nowMs, leaseExpiresAt: null, leaseToken: null, updatedAt: nowMs }),
    );
  }

  private observe(result: AttemptResult, event: JournalEvent, progress: DispatchProgress): void {
    const observer = this.options.observer;
    if (!observer) return;
    observer.attempted(result.ok ? 'succeeded' : 'failed', result.durationMs, result.ok ? this.clock.now() - event.occurredAt : null);
    if (progress.state === 'PAUSED') observer.paused();
  }

  private send(secret: string, event: JournalEvent, url: string): Promise<AttemptResult> {
    const body = JSON.stringify({ ...eventView(event), spaceId: event.spaceId });
    const headers = signedHeaders(secret, event.eventId, this.clock.now(), body);
    const deliver = this.options.deliver ?? attemptDelivery;
    return deliver(url, headers, body, { timeoutMs: this.options.timeoutMs, allowPrivate: this.options.allowPrivate });
  }

  /** The audit row of one attempt and the progress it leaves: on, or back off, or PAUSED. */
  private afterAttempt(d: Destination, progress: DispatchProgress, event: JournalEvent, result: AttemptResult): { attempt: DeliveryAttempt; progress: DispatchProgress } {
    const nowMs = this.clock.now();
    const base = {
      id: this.random.uuid(),
      spaceId: d.spaceId,
      destinationId: d.id,
      eventId: event.eventId,
      attempt: progress.consecutiveFailures + 1,
      httpStatus: result.httpStatus,
      error: result.error,
      responseBody: result.responseBody,
      durationMs: result.durationMs,
      attemptedAt: nowMs,
    };
    if (result.ok) {
      return {
        attempt: { ...base, status: 'SUCCEEDED', nextAttemptAt: null },
        progress: {
          ...progress,
          cursor: event.eventId,
          lastDeliveredEventId: event.eventId,
          deliveredCount: progress.deliveredCount + 1,
          consecutiveFailures: 0,
          failingSince: null,
          lastError: null,
          leaseExpiresAt: nowMs + this.leaseMs,
          updatedAt: nowMs,
        },
      };
    }
    const failures = progress.consecutiveFailures + 1;
    const failingSince = progress.failingSince ?? nowMs;
    const failed = { ...progress, consecutiveFailures: failures, failedCount: progress.failedCount + 1, failingSince, lastError: result.error, leaseExpiresAt: null, leaseToken: null, updatedAt: nowMs };
    if (nowMs - failingSince >= this.options.schedule.pauseAfterMs) {
      const reason = `failing since ${new Date(failingSince).toISOString()} (${failures} attempts at event ${event.eventId}); last error: ${result.error}`;
      return { attempt: { ...base, status: 'FAILED', nextAttemptAt: null }, progress: { ...failed, state: 'PAUSED', pausedAt: nowMs, pausedReason: reason } };
    }
    const nextAttemptAt = nowMs + retryDelayMs(this.options.schedule, failures, this.random);
    return { attempt: { ...base, status: 'FAILED', nextAttemptAt }, progress: { ...failed, nextAttemptAt } };
  }

  private arm(): void {
    if (this.stopped) return;
    this.cancel = this.realTime.schedule(this.options.intervalMs, () => this.loop(undefined));
  }

  /**
   * One run of the started loop, then the next: at once if woken meanwhile; after a re-check
   * delay if this run followed a wake (`recheck`: its index in horizonRecheckDelaysMs) and read
   * nothing on PostgreSQL; else after the interval.
   */
  private loop(recheck: number | undefined): void {
    this.looping = true;
    this.wokenDuringRun = false;
    const readBefore = this.eventsRead;
    this.runDue()
      // A store out of reach is logged once by store-outage.ts, not here every interval.
      .catch((err: unknown) => {
        if (!(err instanceof StoreUnavailable)) this.logger?.error({ err }, 'webhook dispatch run failed; retrying next interval');
      })
      .finally(() => {
        this.looping = false;
        if (this.stopped) return;
        if (this.wokenDuringRun) return this.loop(0);
        const delayMs = recheck === undefined || this.eventsRead > readBefore || this.store.kind !== 'postgres' ? undefined : horizonRecheckDelaysMs[recheck];
        // The last delay (1 s) is the interval's business.
        if (delayMs === undefined || recheck! >= horizonRecheckDelaysMs.length - 1) return this.arm();
        // Real time: the horizon moves in real time, whatever the server's clock.
        const timer = setTimeout(() => this.loop(recheck! + 1), delayMs);
        this.cancel = () => clearTimeout(timer);
      });
  }
}

class LeaseLost extends Error {}

function progressOf(d: Destination): DispatchProgress {
  return {
    state: d.state,
    cursor: d.cursor,
    lastDeliveredEventId: d.lastDeliveredEventId,
    deliveredCount: d.deliveredCount,
    consecutiveFailures: d.consecutiveFailures,
    failedCount: d.failedCount,
    failingSince: d.failingSince,
    nextAttemptAt: d.nextAttemptAt,
    leaseExpiresAt: d.leaseExpiresAt,
    leaseToken: d.leaseToken,
    pausedAt: d.pausedAt,
    pausedReason: d.pausedReason,
    lastError: d.lastError,
    updatedAt: d.updatedAt,
  };
}
