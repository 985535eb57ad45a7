import type { Message, Store, Tx } from '@baton/core';
import { PlantedStore, withOverrides } from '../sim/src/bugs/planted-store';

/**
 * Bugs of the real stack that the torture run plants in its server processes, each at the store
 * seam (torture/planted-server.ts hands startServer the wrapper), to show its history checker
 * catches them (docs/reliability.md). The shipped server holds no switch for any of them.
 */
export const processBugs = [
  /** complete, nack and renew see every CLAIMED lease as live: a worker whose lease ran out still completes until the sweep takes the delivery back. */
  'lease-expiry-ignored',
  /** an operation's reply goes out before its transaction commits (which then waits 300 ms): a server killed in between loses what it acknowledged. */
  'ack-before-commit',
] as const;
export type ProcessBug = (typeof processBugs)[number];

export function isProcessBug(name: string): name is ProcessBug {
  return (processBugs as readonly string[]).includes(name);
}

/** The store a server with `bug` works on. */
export function plantedStore(bug: ProcessBug, store: Store): Store {
  switch (bug) {
    case 'lease-expiry-ignored':
      return new PlantedStore(store, leaseNeverEnds);
    case 'ack-before-commit':
      return new AnswersBeforeCommit(store);
  }
}

/** A CLAIMED message as the lease checks read it: its lease never ends. */
const neverEnding = (m: Message): Message => (m.state === 'CLAIMED' ? { ...m, leaseExpiresAt: Number.MAX_SAFE_INTEGER } : m);

const leaseNeverEnds = (tx: Tx) => ({
  messages: {
    get: async (...args: Parameters<Tx['messages']['get']>) => {
      const m = await tx.messages.get(...args);
      return m && neverEnding(m);
    },
    lockMany: async (...args: Parameters<Tx['messages']['lockMany']>) => (await tx.messages.lockMany(...args)).map(neverEnding),
  },
});

/**
 * An operation's transaction (the one that stores its reply under its Idempotency-Key) hands its
 * result back before it commits, so the reply leaves, and the commit waits 300 ms.
 */
class AnswersBeforeCommit implements Store {
  constructor(private readonly inner: Store) {}

  get kind(): Store['kind'] {
    return this.inner.kind;
  }

  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.inner
        .transaction(async (tx) => {
          let operation = false;
          const put: Tx['idempotency']['put'] = (record) => ((operation = true), tx.idempotency.put(record));
          const result = await work(withOverrides(tx, { idempotency: { put } }));
          if (!operation) return result;
          resolve(result);
          await new Promise((wait) => setTimeout(wait, 300));
          return result;
        })
        .then(resolve, reject);
    });
  }

  read<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.inner.read(work);
  }

  maintain(): Promise<void> {
    return this.inner.maintain();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
