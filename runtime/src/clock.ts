/**
 * Time and chance, injected everywhere in the runtime so that tests and the simulator can
 * drive the client's backoff, the worker's renewals and the helpers' long polls; the defaults
 * read the system.
 */

export interface RuntimeClock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /**
   * Resolves after `ms`; rejects with `signal.reason` as soon as `signal` aborts (a clock that
   * resolves early on abort instead is tolerated: callers check the signal after sleeping).
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export interface RuntimeRandom {
  /** Uniform in [0, 1). */
  next(): number;
}

export const systemClock: RuntimeClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal!.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, Math.max(0, ms));
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

export const systemRandom: RuntimeRandom = { next: () => Math.random() };
