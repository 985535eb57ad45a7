/**
 * The worker's concurrency: at most `size` handlers run at once, and the admission loop waits
 * for a free slot before it admits, because an admitted delivery is leased at once and a lease
 * with no handler to use it only delays the task.
 */
export class HandlerSlots {
  private taken = 0;
  private wakeWaiter: (() => void) | null = null;

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`concurrency must be a positive integer, got ${size}`);
  }

  /** Handlers running now. */
  get inUse(): number {
    return this.taken;
  }

  get free(): number {
    return this.size - this.taken;
  }

  take(): void {
    this.taken += 1;
  }

  release(): void {
    this.taken -= 1;
    this.wake();
  }

  /** Resolves once a slot is free, or at once when `stopped` aborts: the one waiter re-checks why it woke. */
  untilFree(stopped: AbortSignal): Promise<void> {
    if (this.free > 0 || stopped.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const onStop = (): void => this.wake();
      this.wakeWaiter = () => {
        stopped.removeEventListener('abort', onStop);
        resolve();
      };
      stopped.addEventListener('abort', onStop, { once: true });
    });
  }

  private wake(): void {
    const wake = this.wakeWaiter;
    this.wakeWaiter = null;
    wake?.();
  }
}
