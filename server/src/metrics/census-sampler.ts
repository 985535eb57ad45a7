import type { Clock, MailboxCensus, Store, WaitLineCensus } from '@baton/core';
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { DatabaseProbes } from './database-metrics';

export interface CensusOptions {
  /** Time between samples (wall time: sampling is I/O pacing, not domain time). */
  intervalMs: number;
  /** Mailboxes reported, those with the most live messages first: bounds series and query cost. */
  mailboxLimit: number;
  /** Allowance wait lines reported, the longest first. */
  waitLineLimit: number;
}

export const defaultCensusOptions: CensusOptions = { intervalMs: 15_000, mailboxLimit: 500, waitLineLimit: 500 };

/**
 * Gauges of state that lives in the database (mailbox backlogs, wait lines, the journal horizon),
 * sampled by a few bounded reads every `intervalMs`, never per request and never per scrape: the
 * cost is fixed by the interval, whatever the request rate and however many Prometheus servers
 * scrape. Ages are measured on the injected clock, the one that stamped createdAt.
 *
 * Each sample replaces the last one whole: a mailbox that drained or fell out of the top
 * `mailboxLimit` leaves the output rather than showing its last value forever.
 */
export class CensusSampler {
  private readonly mailboxMessages: Gauge<'space' | 'mailbox' | 'state'>;
  private readonly oldestReadyAge: Gauge<'space' | 'mailbox'>;
  private readonly waiters: Gauge<'space' | 'allowance'>;
  private readonly oldestWaiterAge: Gauge<'space' | 'allowance'>;
  private readonly horizonLag: Gauge | undefined;
  private readonly duration: Gauge;
  private readonly failures: Counter;
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  /** The sample under way, if any: samples run one at a time, so an older one never lands after a newer one. */
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    registry: Registry,
    private readonly database: DatabaseProbes | undefined,
    private readonly logger: Logger | undefined,
    private readonly options: CensusOptions = defaultCensusOptions,
  ) {
    const registers = [registry];
    this.mailboxMessages = new Gauge({
      name: 'baton_mailbox_messages',
      help: `Messages of a mailbox by state (READY, CLAIMED, DEAD); sampled, for the ${options.mailboxLimit} mailboxes with the most live messages.`,
      labelNames: ['space', 'mailbox', 'state'] as const,
      registers,
    });
    this.oldestReadyAge = new Gauge({
      name: 'baton_mailbox_oldest_ready_age_seconds',
      help: 'Age of the oldest READY message of a mailbox (0 when none is READY); sampled, same mailboxes as baton_mailbox_messages.',
      labelNames: ['space', 'mailbox'] as const,
      registers,
    });
    this.waiters = new Gauge({
      name: 'baton_allowance_waiters',
      help: `Waiters in an allowance's FIFO wait line; sampled, for the ${options.waitLineLimit} longest lines.`,
      labelNames: ['space', 'allowance'] as const,
      registers,
    });
    this.oldestWaiterAge = new Gauge({
      name: 'baton_allowance_oldest_waiter_age_seconds',
      help: "Age of the oldest waiter in an allowance's wait line; sampled, same lines as baton_allowance_waiters.",
      labelNames: ['space', 'allowance'] as const,
      registers,
    });
    this.horizonLag = database
      ? new Gauge({
          name: 'baton_journal_horizon_lag_seconds',
          help: 'Seconds since the oldest transaction holding an xid began on the PostgreSQL server: how long journal events may stay unreadable (docs/event-journal.md); sampled.',
          registers,
        })
      : undefined;
    this.duration = new Gauge({ name: 'baton_census_duration_seconds', help: 'Wall time the last census sample took (its reads).', registers });
    this.failures = new Counter({ name: 'baton_census_failures_total', help: 'Census samples that failed (the gauges keep the last good sample).', registers });
  }

  /** Samples now, then every intervalMs. The timer never keeps the process alive. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.arm(0);
  }

  /** No sample starts after this; resolves once the one under way, if any, has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running.catch(() => undefined);
  }

  /** One sample, after the one under way: for tests, and for a first value right at start. Rejects when a read fails. */
  sampleNow(): Promise<void> {
    const next = this.running.then(() => this.sample());
    this.running = next.catch(() => undefined);
    return next;
  }

  private arm(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.sampleNow()
        .catch((err: unknown) => {
          this.failures.inc();
          this.logger?.warn({ err }, 'metrics census failed; keeping the last sample');
        })
        .finally(() => this.arm(this.options.intervalMs));
    }, delayMs);
    this.timer.unref();
  }

  private async sample(): Promise<void> {
    const startedMs = performance.now();
    const [mailboxes, lines, horizonLag] = await Promise.all([
      this.store.read((tx) => tx.messages.census(this.options.mailboxLimit)),
      this.store.read((tx) => tx.allowanceWaiters.censusLines(this.options.waitLineLimit)),
      this.database?.horizonLagSeconds(),
    ]);
    const nowMs = this.clock.now();
    this.showMailboxes(mailboxes, nowMs);
    this.showWaitLines(lines, nowMs);
    if (horizonLag !== undefined) this.horizonLag?.set(horizonLag);
    this.duration.set((performance.now() - startedMs) / 1000);
  }

  private showMailboxes(census: readonly MailboxCensus[], nowMs: number): void {
    this.mailboxMessages.reset();
    this.oldestReadyAge.reset();
    for (const c of census) {
      const labels = { space: c.spaceId, mailbox: c.mailboxName };
      this.mailboxMessages.set({ ...labels, state: 'READY' }, c.ready);
      this.mailboxMessages.set({ ...labels, state: 'CLAIMED' }, c.claimed);
      this.mailboxMessages.set({ ...labels, state: 'DEAD' }, c.dead);
      this.oldestReadyAge.set(labels, c.oldestReadyAt === null ? 0 : ageSeconds(c.oldestReadyAt, nowMs));
    }
  }

  private showWaitLines(lines: readonly WaitLineCensus[], nowMs: number): void {
    this.waiters.reset();
    this.oldestWaiterAge.reset();
    for (const line of lines) {
      const labels = { space: line.spaceId, allowance: line.allowanceName };
      this.waiters.set(labels, line.waiting);
      this.oldestWaiterAge.set(labels, ageSeconds(line.oldestWaitingAt, nowMs));
    }
  }
}

/** Never negative: a message stamped by another server whose clock runs ahead is 0 s old, not -0.2. */
const ageSeconds = (sinceMs: number, nowMs: number): number => Math.max(0, nowMs - sinceMs) / 1000;
