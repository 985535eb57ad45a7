import { assert } from '../assert';
import type { Clock, ClockMode } from './clock';

interface Timer {
  dueMs: number;
  order: number;
  fire: () => void;
}

/**
 * A clock that moves only when told to. Timers fire in due order during `advance`, each
 * seeing `now()` equal to its own due time, so a test or the simulator replays exactly.
 */
export class ManualClock implements Clock {
  private nowMs: number;
  private timers: Timer[] = [];
  private nextOrder = 0;

  constructor(
    startMs: number,
    readonly mode: ClockMode = 'manual',
  ) {
    assert(Number.isSafeInteger(startMs) && startMs >= 0, 'clock start must be a non-negative integer');
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  schedule(delayMs: number, fire: () => void): () => void {
    const timer: Timer = { dueMs: this.nowMs + Math.max(0, delayMs), order: this.nextOrder++, fire };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  advance(ms: number): number {
    assert(Number.isSafeInteger(ms) && ms >= 0, 'clock advance must be a non-negative integer');
    const targetMs = this.nowMs + ms;
    for (;;) {
      const next = this.nextDue(targetMs);
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.nowMs = next.dueMs;
      next.fire();
    }
    this.nowMs = targetMs;
    return this.nowMs;
  }

  /** Time of the earliest pending timer, for schedulers that jump straight to it. */
  nextTimerMs(): number | undefined {
    return this.nextDue(Number.MAX_SAFE_INTEGER)?.dueMs;
  }

  private nextDue(limitMs: number): Timer | undefined {
    let best: Timer | undefined;
    for (const t of this.timers) {
      if (t.dueMs > limitMs) continue;
      if (!best || t.dueMs < best.dueMs || (t.dueMs === best.dueMs && t.order < best.order)) best = t;
    }
    return best;
  }
}
