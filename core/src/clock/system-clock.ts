import type { Clock } from './clock';

/** The wall clock: the one place in core/ allowed to read it. */
export class SystemClock implements Clock {
  readonly mode = 'system' as const;
  now(): number {
    return Date.now();
  }
  schedule(delayMs: number, fire: () => void): () => void {
    const timer = setTimeout(fire, Math.max(0, delayMs));
    // A pending timer (a sweep, a long poll) must never keep a draining process alive.
    timer.unref?.();
    return () => clearTimeout(timer);
  }
}
