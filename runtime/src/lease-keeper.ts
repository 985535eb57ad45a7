import type { RuntimeClock } from './clock';
import { leaseTimes, renewRetryInMs, type LeaseTimes } from './lease-timing';
import { sleepQuietly } from './sleep-quietly';

/** LEASE_LOST: the server refused the token; EXPIRED: the local deadline passed before a renew succeeded. */
export type LeaseLostCause = 'LEASE_LOST' | 'EXPIRED';

/** One renew's answer, as the holder classifies it: only the holder knows its client's errors. */
export type RenewAnswer = { ok: true; leaseExpiresAt: string } | { ok: false; leaseLost: boolean; error: unknown };

export interface LeaseKeeperOptions {
  clock: RuntimeClock;
  /** Asked for on every renew (the server may grant less: leaseTimes reads what it granted). */
  leaseSeconds: number;
  /** Sends one renew. `signal` aborts when the keeper stops, so a renew in flight is given up. */
  renew: (signal: AbortSignal) => Promise<RenewAnswer>;
  onRenewed: (leaseExpiresAt: string) => void;
  onRenewFailed: (error: unknown, retryInMs: number) => void;
  /** The lease ended under the holder. Called at most once, and never after stop(). */
  onLost: (cause: LeaseLostCause) => void;
}

/**
 * Keeps one lease alive while its holder works: renews it a third of the way in, retries a
 * failed renew while time is left, and declares it lost the moment the server refuses the token
 * or the local deadline passes. Shared by the worker's deliveries and withClaim's claims.
 *
 * Two loops run side by side, the renewer and the deadline watch, because a renew can hang: the
 * watch must fire on time even while the renewer waits for an answer.
 */
export class LeaseKeeper {
  private keeping = true;
  private times: LeaseTimes;
  /** Aborted by stop(): wakes both loops and abandons a renew in flight. */
  private readonly ended = new AbortController();

  /** `granted` is the reply that started the lease and the moment to count it from (see leaseTimes). */
  constructor(
    private readonly options: LeaseKeeperOptions,
    granted: { leaseExpiresAt: string; countFromMs: number },
  ) {
    this.times = leaseTimes(granted.leaseExpiresAt, options.leaseSeconds, granted.countFromMs);
  }

  /** Runs until stop() or a loss; resolves once neither loop can send anything more. */
  async keep(): Promise<void> {
    await Promise.all([this.renewUntilEnded(), this.watchDeadline()]);
  }

  /**
   * Whether the token may still be used: the local deadline has not passed. Still answers after
   * stop(), for a complete or release that leaves after the renewals ended.
   */
  beforeDeadline(): boolean {
    return this.options.clock.now() < this.times.deadlineMs;
  }

  /** No renew starts after this, and the answer of one in flight is ignored. */
  stop(): void {
    this.keeping = false;
    this.ended.abort();
  }

  private async renewUntilEnded(): Promise<void> {
    const { clock } = this.options;
    while (this.keeping) {
      await sleepQuietly(clock, this.times.renewAtMs - clock.now(), this.ended.signal);
      if (!this.keeping) return;
      await this.renewOnce();
    }
  }

  private async renewOnce(): Promise<void> {
    const { clock, leaseSeconds } = this.options;
    const sentAtMs = clock.now();
    const answer = await this.options.renew(this.ended.signal);
    if (!this.keeping) return;
    if (answer.ok) {
      this.times = leaseTimes(answer.leaseExpiresAt, leaseSeconds, sentAtMs);
      this.options.onRenewed(answer.leaseExpiresAt);
      return;
    }
    if (answer.leaseLost) return this.lose('LEASE_LOST');
    // Try again well before the deadline; the watch gives up for us when it passes.
    const retryInMs = renewRetryInMs(clock.now(), this.times.deadlineMs);
    this.times = { ...this.times, renewAtMs: clock.now() + retryInMs };
    this.options.onRenewFailed(answer.error, retryInMs);
  }

  /** Sleeps to the deadline; a renew that succeeded meanwhile has moved it, so look again. */
  private async watchDeadline(): Promise<void> {
    const { clock } = this.options;
    while (this.keeping) {
      const leftMs = this.times.deadlineMs - clock.now();
      if (leftMs <= 0) return this.lose('EXPIRED');
      await sleepQuietly(clock, leftMs, this.ended.signal);
    }
  }

  private lose(cause: LeaseLostCause): void {
    if (!this.keeping) return;
    this.stop();
    this.options.onLost(cause);
  }
}
