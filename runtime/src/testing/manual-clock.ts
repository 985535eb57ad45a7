import type { RuntimeClock } from '../clock';

/** Lets pending promise callbacks and the macrotasks they queue run. */
export const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * A clock for unit tests of concurrent loops (a renewer and an expiry watch sleeping at once):
 * time moves only on advance(), which fires the due sleeps in time order and drains the queues
 * after each, so the code reacts to one timer before the next fires. SteppingClock would add
 * every concurrent sleep to the same time line instead.
 */
export class ManualClock implements RuntimeClock {
  private t = Date.parse('2026-01-01T00:00:00.000Z');
  private seq = 0;
  private timers: { atMs: number; seq: number; fire: () => void }[] = [];

  now(): number {
    return this.t;
  }

  /** Sleeps not yet fired, for asserting that a loop stopped. */
  get pending(): number {
    return this.timers.length;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      // As systemClock: a fired timer removes its abort listener.
      const onAbort = (): void => {
        this.timers = this.timers.filter((t) => t !== timer);
        reject(signal!.reason);
      };
      const timer = { atMs: this.t + Math.max(0, ms), seq: this.seq++, fire: () => (signal?.removeEventListener('abort', onAbort), resolve()) };
      this.timers.push(timer);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Moves time without firing a timer, as an event loop blocked by a long synchronous step does. */
  jump(ms: number): void {
    this.t += ms;
  }

  async advance(ms: number): Promise<void> {
    const targetMs = this.t + ms;
    await flush();
    for (;;) {
      const due = this.timers.filter((t) => t.atMs <= targetMs).sort((a, b) => a.atMs - b.atMs || a.seq - b.seq)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.t = Math.max(this.t, due.atMs);
      due.fire();
      await flush();
    }
    this.t = targetMs;
    await flush();
  }
}
