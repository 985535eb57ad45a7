import type { Clock } from './clock/clock';

/**
 * Wakes long polls (barrier and waiter views, later recv, admit and watch) when something they
 * wait for commits. Topics are `${aggregateType}:${aggregateId}`, one per event appended, so
 * whatever emits an event wakes whoever waits on its aggregate. In-process here; a PostgreSQL
 * LISTEN/NOTIFY notifier will carry the same topics across servers.
 */
export interface Notifier {
  notify(topic: string): void;
  /**
   * Resolves when `topic` is notified, when `maxWaitMs` have passed on the clock, or when
   * `signal` aborts (the server drains), whichever comes first. Callers re-read state after.
   */
  wait(topic: string, maxWaitMs: number, signal?: AbortSignal): Promise<void>;
  /**
   * Calls `listener` on every notification of `topic`, and whenever notifications may have been
   * missed (wakeAll), until the returned function is called. A standing listener, for caches
   * that a commit on another server must clear; unlike wait() it holds no timer and is not
   * counted as a parked wait.
   */
  subscribe(topic: string, listener: () => void): () => void;
}

export const topicOf = (aggregateType: string, aggregateId: string): string => `${aggregateType}:${aggregateId}`;

export class LocalNotifier implements Notifier {
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly listeners = new Map<string, Set<() => void>>();

  constructor(private readonly clock: Clock) {}

  notify(topic: string): void {
    for (const listener of this.listeners.get(topic) ?? []) listener();
    const set = this.waiters.get(topic);
    if (!set) return;
    this.waiters.delete(topic);
    for (const wake of set) wake();
  }

  wait(topic: string, maxWaitMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted || maxWaitMs <= 0) return resolve();
      let set = this.waiters.get(topic);
      if (!set) this.waiters.set(topic, (set = new Set()));
      const done = (): void => {
        cancel();
        signal?.removeEventListener('abort', done);
        this.waiters.get(topic)?.delete(done);
        resolve();
      };
      set.add(done);
      const cancel = this.clock.schedule(maxWaitMs, done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  subscribe(topic: string, listener: () => void): () => void {
    let set = this.listeners.get(topic);
    if (!set) this.listeners.set(topic, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  /**
   * Wakes every parked wait, whatever its topic (callers re-read and wait again), and calls every
   * subscribed listener. Used when
   * notifications may have been missed (the cross-server listener is down or just came back).
   */
  wakeAll(): void {
    for (const set of this.listeners.values()) for (const listener of set) listener();
    const sets = [...this.waiters.values()];
    this.waiters.clear();
    for (const set of sets) for (const wake of set) wake();
  }

  /** Waits currently parked, for tests and metrics. */
  get parked(): number {
    let n = 0;
    for (const set of this.waiters.values()) n += set.size;
    return n;
  }
}
