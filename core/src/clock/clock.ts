/**
 * The only source of time in Baton. Nothing else reads the wall clock or arms a real timer,
 * so the manual clock (users' tests) and the simulated clock (sim/) can drive every
 * time-based move: lease expiry, overdue reservations, long-poll timeouts.
 */
export type ClockMode = 'system' | 'manual' | 'simulated';

export interface Clock {
  readonly mode: ClockMode;
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Calls `fire` once `delayMs` have passed on this clock; the returned function cancels it. */
  schedule(delayMs: number, fire: () => void): () => void;
}

/** Resolves after `delayMs` on `clock`, or at once when `signal` aborts. */
export function sleep(clock: Clock, delayMs: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      cancel();
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const cancel = clock.schedule(delayMs, done);
    signal?.addEventListener('abort', done, { once: true });
  });
}
