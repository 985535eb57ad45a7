import type { RuntimeClock } from '../clock';

/**
 * A clock for unit tests: every sleep ends on the next macrotask (unless aborted first) and
 * moves time by what it asked for, so a test runs retries and backoffs at once and reads back
 * the delays the code chose.
 */
export class SteppingClock implements RuntimeClock {
  nowMs = Date.UTC(2026, 0, 1);
  /** Completed sleeps only: an attempt's timeout that the reply beat is not here. */
  readonly slept: number[] = [];
  onSleep: (ms: number) => void = () => undefined;

  now(): number {
    return this.nowMs;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.onSleep(ms);
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = (): void => {
        clearImmediate(handle);
        reject(signal!.reason);
      };
      const handle = setImmediate(() => {
        signal?.removeEventListener('abort', onAbort);
        this.nowMs += ms;
        this.slept.push(ms);
        resolve();
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
