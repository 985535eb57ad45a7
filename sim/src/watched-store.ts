import type { Store, Tx } from '@baton/core';

/**
 * The store as the servers see it, counting every call that could change it: each transaction
 * and, to be safe, each read (a read hands out the same repositories). The per-step checks read
 * the inner store and run only when `changes` moved since they last ran: a step that touched no
 * store leaves every row as the last check saw it, so checking again could find nothing new.
 * A call moves the count when it starts and again when it ends, and a call still open moves it
 * at every look, so a transaction open across a step boundary, or one that commits while a
 * check is reading, is checked again after it.
 */
export class WatchedStore implements Store {
  private started = 0;
  private open = 0;

  constructor(readonly inner: Store) {}

  get kind(): Store['kind'] {
    return this.inner.kind;
  }

  /** Moves (only ever up) whenever a store call started since the last look, or one is still running. */
  get changes(): number {
    if (this.open > 0) this.started++;
    return this.started;
  }

  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.track(this.inner.transaction(work));
  }

  read<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.track(this.inner.read(work));
  }

  maintain(): Promise<void> {
    return this.track(this.inner.maintain());
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private track<T>(call: Promise<T>): Promise<T> {
    this.started++;
    this.open++;
    return call.finally(() => {
      this.open--;
      this.started++; // its end moves the count too: a write committed after a check read is checked again
    });
  }
}
