import { budgets, type Clock, type Store } from '@baton/core';
import type { Logger } from 'pino';

/** Rows one sweep transaction handles; a full batch means more are due, so the sweep goes on. */
const batchSize = 100;

/**
 * Time-based work, decided from the injected clock: today the overdue-reservation sweep.
 * Safe on any number of servers at once: each batch is claimed with SKIP LOCKED.
 */
export class BackgroundWork {
  private cancel: (() => void) | undefined;
  private stopped = true;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly logger: Logger | undefined,
    private readonly intervalMs = 1_000,
  ) {}

  start(): void {
    this.stopped = false;
    this.arm();
  }

  stop(): void {
    this.stopped = true;
    this.cancel?.();
  }

  async runDue(): Promise<void> {
    for (;;) {
      const emitted = await this.store.transaction((tx) => budgets.emitOverdueReservations(tx, this.clock.now(), batchSize));
      if (emitted < batchSize) return;
    }
  }

  private arm(): void {
    if (this.stopped) return;
    this.cancel = this.clock.schedule(this.intervalMs, () => {
      this.runDue()
        .catch((err: unknown) => this.logger?.error({ err }, 'background sweep failed; retrying next interval'))
        .finally(() => this.arm());
    });
  }
}
