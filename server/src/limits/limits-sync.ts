import { minuteOf, monthOf, StoreUnavailable, SystemClock, type Clock, type Store } from '@baton/core';
import type { Logger } from 'pino';
import type { RequestRate } from './request-rate';
import type { UsageLedger } from './usage-ledger';

/**
 * How often a server publishes its counts and reads the others'. The organization's request rate
 * holds across servers to within this much of the other servers' traffic (less: request-rate.ts
 * carries their counts forward at their last rate), a crash loses at most this much of the
 * operations count, and the load counts are this old at most (docs/design/0016-limits-and-retry-after.md allows one second for
 * each). One transaction of five statements per interval per server, whatever the request rate.
 */
export const defaultSyncIntervalMs = 250;

/** Request-minute rows older than this are history nobody reads; each sync deletes a few. */
const requestMinutesKept = 5;
/** Usage records are kept 400 days (docs/design/0017-retention.md). */
const usageRetentionMs = 400 * 24 * 60 * 60 * 1000;
const purgeBatchSize = 500;

/**
 * The background half of the limits: every interval, in one transaction, it writes this server's
 * request counts and buffered operations and reads the other servers' counts, the month's
 * totals and the load of the organizations seen lately. Failures keep the buffered operations for
 * the next try. It also runs once on drain, so a clean stop loses no count.
 */
export class LimitsSync {
  private cancel: (() => void) | undefined;
  private stopped = true;
  private running: Promise<void> | undefined;
  private purgedMinute = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly serverId: string,
    private readonly rate: RequestRate,
    private readonly ledger: UsageLedger,
    private readonly logger: Logger | undefined,
    private readonly intervalMs = defaultSyncIntervalMs,
    /**
     * What the loop is timed by: real time, not the service clock (docs/design/0023-service-clock.md), so on a manual
     * clock the load counts still refresh every interval. Tests and the simulator inject their own.
     */
    private readonly realTime: Clock = new SystemClock(),
  ) {}

  start(): void {
    this.stopped = false;
    this.arm();
  }

  /** Stops the timer and syncs once more: what this server counted reaches the store. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.cancel?.();
    await this.sync();
  }

  /** One sync; overlapping calls share the one under way. */
  sync(): Promise<void> {
    return (this.running ??= this.syncOnce().finally(() => (this.running = undefined)));
  }

  private async syncOnce(): Promise<void> {
    const nowMs = this.clock.now();
    const month = monthOf(nowMs);
    const own = this.rate.ownCounts(nowMs);
    const orgIds = this.ledger.watched(nowMs);
    const pending = this.ledger.takePending();
    const mark = this.ledger.localLoadMark();
    try {
      const read = await this.store.transaction(async (tx) => {
        await tx.usage.putRequestCounts(this.serverId, own.minute, own.requestsByOrg);
        for (const [pendingMonth, byOrg] of pending) await tx.usage.addOperations(pendingMonth, byOrg);
        const others = await tx.usage.requestCountsOfOthers(this.serverId, own.minute);
        const totals = await tx.usage.operationsOf(month, orgIds);
        const loads = await tx.usage.loadOf(orgIds, nowMs);
        return { others, totals, loads };
      });
      this.rate.setOthers(own.minute, read.others, nowMs);
      this.ledger.applySync(month, orgIds, read.totals, read.loads, mark);
    } catch (error) {
      this.ledger.restore(pending);
      throw error;
    }
    await this.purgeOnceAMinute(nowMs);
  }

  /** Old request minutes and usage records past 400 days, a bounded batch of each, once a minute per server. */
  private async purgeOnceAMinute(nowMs: number): Promise<void> {
    const minute = minuteOf(nowMs);
    if (minute === this.purgedMinute) return;
    this.purgedMinute = minute;
    await this.store.transaction((tx) => tx.usage.purgeRequestCountsBefore(minute - requestMinutesKept, purgeBatchSize));
    await this.store.transaction((tx) => tx.usage.purgeOperationsBefore(monthOf(nowMs - usageRetentionMs), purgeBatchSize));
  }

  private arm(): void {
    if (this.stopped) return;
    this.cancel = this.realTime.schedule(this.intervalMs, () => {
      this.sync()
        // A store out of reach is logged once by store-outage.ts, not here four times a second.
        .catch((err: unknown) => {
          if (!(err instanceof StoreUnavailable)) this.logger?.warn({ err }, 'limits sync failed; counts kept for the next try');
        })
        .finally(() => this.arm());
    });
  }
}
