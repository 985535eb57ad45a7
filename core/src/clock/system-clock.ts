import type { Clock } from './clock';

/** setTimeout's longest delay (2^31 - 1 ms, about 24.8 days); a longer one would fire at once. */
const maxTimeoutMs = 2_147_483_647;

/** The wall clock: the one place in core/ allowed to read it. */
export class SystemClock implements Clock {
  readonly mode = 'system' as const;
  now(): number {
    return Date.now();
  }
  schedule(delayMs: number, fire: () => void): () => void {
    let timer: ReturnType<typeof setTimeout>;
    // A delay past setTimeout's range waits in steps, so a long interval (a test's "never") stays long.
    const arm = (remainingMs: number): void => {
      const stepMs = Math.min(Math.max(0, remainingMs), maxTimeoutMs);
      timer = setTimeout(() => (remainingMs > stepMs ? arm(remainingMs - stepMs) : fire()), stepMs);
      // A pending timer (a sweep, a long poll) must never keep a draining process alive.
      timer.unref?.();
    };
    arm(delayMs);
    return () => clearTimeout(timer);
  }
}
