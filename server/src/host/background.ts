import { allowances, budgets, claims, deliveries, groups, runs, StoreUnavailable, SystemClock, timers, type Clock, type Random, type Store } from '@baton/core';
import type { Logger } from 'pino';
import { replayWindowMs } from '../http/operation';
import { RetentionSweep } from './retention';

/** Cancelled runs one cascade transaction steps: each step may cancel up to 50 tasks and 50 child runs. */
const cascadingRunsPerBatch = 4;
/** Cascade transactions one pass runs at most: 200 run steps, up to 10,000 tasks cancelled. */
const cascadeTransactionsPerCall = 50;

/** Rows one sweep transaction handles; a full batch means more are due, so the sweep goes on. */
const batchSize = 100;

/**
 * Retention (docs/design/0017-retention.md) deletes in batches of this many rows, at most this many batches a
 * pass: a backlog (a server down for days) drains over several passes, in short transactions.
 */
const purgeBatchSize = 500;
const purgeBatchesPerPass = 20;

/**
 * Time-based work, decided from the service clock: the overdue-reservation sweep and the
 * allowance grant sweep (lines moved by a window roll, a cooldown's end or a waiter's expiry),
 * message lease expiry, task and task group deadlines, and retention: idempotency records past
 * the replay window, and tasks, messages, journal events and webhook delivery audit past theirs
 * (retention.ts).
 * Safe on any number of servers at once: each batch is claimed with SKIP LOCKED.
 *
 * The loop itself runs on `realTime`, the wall clock (docs/design/0023-service-clock.md): on a manual clock it still
 * runs every interval, so what follows from a request without depending on time (a cancelled
 * run's cascade) happens without the clock moving; what is due by the service clock waits for it.
 */
export class BackgroundWork {
  private cancel: (() => void) | undefined;
  private stopped = true;
  private readonly retention: RetentionSweep;
  /** A cascade run asked for by cascadeSoon and not yet started: later asks fold into it. */
  private cascadeAsked = false;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly logger: Logger | undefined,
    /** Ids of what a sweep writes (the void entry of an expired admission's reservation). */
    private readonly random: Random,
    private readonly intervalMs = 1_000,
    /** Real time (SystemClock) unless a test or the simulator injects its own. */
    private readonly realTime: Clock = new SystemClock(),
  ) {
    this.retention = new RetentionSweep(store, clock);
  }

  start(): void {
    this.stopped = false;
    this.arm();
  }

  stop(): void {
    this.stopped = true;
    this.cancel?.();
  }

  async runDue(): Promise<void> {
    await this.store.maintain();
    await this.untilDone((nowMs) => this.store.transaction((tx) => budgets.emitOverdueReservations(tx, nowMs, batchSize)));
    await this.untilDone((nowMs) => this.store.transaction((tx) => allowances.serveDueLines(tx, nowMs, batchSize)));
    // Message leases that ran out go back to READY (or DEAD): their tokens die, recv wakes.
    await this.untilDone((nowMs) => this.store.transaction((tx) => deliveries.expireLeases(tx, nowMs, batchSize, this.random)));
    // Claims whose lease ran out become EXPIRED (claim.expired); their keys are free already.
    await this.untilDone((nowMs) => this.store.transaction((tx) => claims.expireLeases(tx, nowMs, batchSize)));
    // Tasks whose deadline passed before success become EXPIRED; a READY delivery is cancelled.
    await this.untilDone((nowMs) => this.store.transaction((tx) => deliveries.expireTaskDeadlines(tx, nowMs, batchSize, this.random)));
    // Task groups whose deadline passed undecided decide FAILED DEADLINE_EXCEEDED; live members are cancelled.
    await this.untilDone((nowMs) => this.store.transaction((tx) => groups.expireDeadlines(tx, nowMs, batchSize, this.random)));
    // Due timers fire, oldest first: each sends its message and becomes FIRED in one transaction.
    await this.untilDone((nowMs) => this.store.transaction((tx) => timers.fireDue(tx, nowMs, batchSize, this.random)));
    await this.finishCascades();
    await this.purgeIdempotency();
    await this.retention.pass();
  }

  /**
   * Finishes cancelled runs' cascades soon, not at the next interval: a run's cancel asks for
   * what its own step left (its child runs' cascades, or the rest of a large run). Only while
   * started; tests and the simulator drive runDue themselves.
   */
  cascadeSoon(): void {
    if (this.stopped || this.cascadeAsked) return;
    this.cascadeAsked = true;
    this.realTime.schedule(0, () => {
      this.cascadeAsked = false;
      if (this.stopped) return;
      this.finishCascades().catch((err: unknown) => this.logger?.error({ err }, 'run cascade failed; the sweep retries next interval'));
    });
  }

  /**
   * Cancelled runs' cascades, a few runs a transaction (each step cancels up to runs.cascadeBatch
   * of each kind), until none is left: a step that cancels child runs leaves their cascades to
   * the next transaction, so a tree of runs finishes in one call. At most cascadeTransactionsPerCall
   * transactions; a larger cascade goes on at the next call.
   */
  private async finishCascades(): Promise<void> {
    for (let n = 0; n < cascadeTransactionsPerCall; n++) {
      if ((await this.store.transaction((tx) => runs.cascadeDue(tx, this.clock.now(), cascadingRunsPerBatch, this.random))) === 0) return;
    }
  }

  /** Idempotency records that can no longer be replayed (older than 24 h); the replay check ignores them already. */
  private async purgeIdempotency(): Promise<void> {
    for (let batch = 0; batch < purgeBatchesPerPass; batch++) {
      const cutoffMs = this.clock.now() - replayWindowMs;
      if ((await this.store.transaction((tx) => tx.idempotency.purgeUntil(cutoffMs, purgeBatchSize))) < purgeBatchSize) return;
    }
  }

  /** Repeats a batch while batches come back full: more is due than one transaction should hold. */
  private async untilDone(batch: (nowMs: number) => Promise<number>): Promise<void> {
    while ((await batch(this.clock.now())) === batchSize);
  }

  private arm(): void {
    if (this.stopped) return;
    this.cancel = this.realTime.schedule(this.intervalMs, () => {
      this.runDue()
        // A store out of reach is logged once by store-outage.ts, not here every interval.
        .catch((err: unknown) => {
          if (!(err instanceof StoreUnavailable)) this.logger?.error({ err }, 'background sweep failed; retrying next interval');
        })
        .finally(() => this.arm());
    });
  }
}
