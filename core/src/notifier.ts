import type { Clock } from './clock/clock';

/**
 * Wakes long polls (barrier and waiter views, later recv, admit and watch) when something they
 * wait for commits. Topics are `${aggregateType}:${aggregateId}`, one per event appended, so
 * whatever emits an event wakes whoever waits on its aggregate (GET /watch adds topics of its own:
 * events/watch-topics.ts). In-process here; a PostgreSQL
 * LISTEN/NOTIFY notifier will carry the same topics across servers.
 */
export interface Notifier {
  /**
   * Wakes the waits parked on `topic`: all of them, or with `count` only the `count` parked
   * longest (a commit that made two deliveries READY wakes two long polls, not two thousand;
   * see readyTopicOf and docs/architecture-notes.md, "Idle fleets").
   */
  notify(topic: string, count?: number): void;
  /**
   * Resolves when `topic` is notified (true), when `maxWaitMs` have passed on the clock, or when
   * `signal` aborts (the server drains) (false), whichever comes first. Callers re-read state after.
   */
  wait(topic: string, maxWaitMs: number, signal?: AbortSignal): Promise<boolean>;
  /**
   * Calls `listener` on every notification of `topic`, and whenever notifications may have been
   * missed (wakeAll), until the returned function is called. A standing listener, for caches
   * that a commit on another server must clear; unlike wait() it holds no timer and is not
   * counted as a parked wait.
   */
  subscribe(topic: string, listener: () => void): () => void;
}

export const topicOf = (aggregateType: string, aggregateId: string): string => `${aggregateType}:${aggregateId}`;

/**
 * Where a delivery that became READY wakes one long poll: by mailbox, scope and kind, so the
 * poll woken can take it. `task` deliveries are for admit and recv; `plain` messages for recv
 * alone (admission takes task deliveries only). A recv or admit parks on the topics of every
 * scope it claims from (its scope and the gate scopes below), and a woken poll that claimed
 * wakes the next (long-poll.ts): one READY delivery wakes one poll, several wake one after
 * another until one finds nothing.
 */
export const readyTopicOf = (mailboxId: string, scopeId: string, kind: 'task' | 'plain'): string => `ready:${mailboxId}:${scopeId}:${kind}`;

/** The ready topics a recv (`plain` and `task`) or an admit (`task`) over `scopeIds` parks on. */
export const readyTopicsOf = (mailboxId: string, scopeIds: readonly string[], kinds: readonly ('task' | 'plain')[]): string[] =>
  scopeIds.flatMap((scopeId) => kinds.map((kind) => readyTopicOf(mailboxId, scopeId, kind)));

/** Whether a wake on `topic` was one of a counted few (readyTopicOf): the poll it woke passes it on once it claimed. */
export const isReadyTopic = (topic: string): boolean => topic.startsWith('ready:');

export class LocalNotifier implements Notifier {
  private readonly waiters = new Map<string, Set<(notified: boolean) => void>>();
  private readonly listeners = new Map<string, Set<() => void>>();

  constructor(private readonly clock: Clock) {}

  notify(topic: string, count?: number): void {
    for (const listener of this.listeners.get(topic) ?? []) listener();
    const set = this.waiters.get(topic);
    if (!set) return;
    if (count === undefined || count >= set.size) {
      this.waiters.delete(topic);
      for (const wake of set) wake(true);
      return;
    }
    // A Set iterates in insertion order: the first are the waits parked longest.
    for (const wake of [...set].slice(0, count)) wake(true);
  }

  wait(topic: string, maxWaitMs: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      if (signal?.aborted || maxWaitMs <= 0) return resolve(false);
      let set = this.waiters.get(topic);
      if (!set) this.waiters.set(topic, (set = new Set()));
      const done = (notified: boolean): void => {
        cancel();
        signal?.removeEventListener('abort', onAbort);
        const waiting = this.waiters.get(topic);
        waiting?.delete(done);
        if (waiting?.size === 0) this.waiters.delete(topic);
        resolve(notified);
      };
      const onAbort = (): void => done(false);
      set.add(done);
      const cancel = this.clock.schedule(maxWaitMs, () => done(false));
      signal?.addEventListener('abort', onAbort, { once: true });
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
    for (const set of sets) for (const wake of set) wake(true);
  }

  /** Waits currently parked, for tests and metrics. */
  get parked(): number {
    let n = 0;
    for (const set of this.waiters.values()) n += set.size;
    return n;
  }
}
