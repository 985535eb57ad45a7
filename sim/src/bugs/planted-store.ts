import type { Store, Tx } from '@baton/core';

/** Replacements for some of a transaction's repository methods; each sees the real repositories. */
export type RepositoryOverrides = { [K in keyof Tx]?: Partial<Tx[K]> };

/**
 * The store as the servers see it with a known bug planted between them and the real store, as
 * a fault at the store seam (the way watched-store.ts counts calls): some repository methods
 * answer or write what a buggy store, or a service with the bug, would. The checkers read the
 * real store beneath it. Production code knows nothing of it.
 */
export class PlantedStore implements Store {
  constructor(
    readonly inner: Store,
    private readonly overrides: (tx: Tx) => RepositoryOverrides,
  ) {}

  get kind(): Store['kind'] {
    return this.inner.kind;
  }

  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.inner.transaction((tx) => work(withOverrides(tx, this.overrides(tx))));
  }

  read<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.inner.read((tx) => work(withOverrides(tx, this.overrides(tx))));
  }

  maintain(): Promise<void> {
    return this.inner.maintain();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** `tx` with the methods `overrides` names replaced; everything else is the real repositories'. */
export function withOverrides(tx: Tx, overrides: RepositoryOverrides): Tx {
  const replacements = overrides as Record<string, Record<string, unknown> | undefined>;
  return new Proxy(tx, {
    get(target, name) {
      const repository: unknown = Reflect.get(target, name);
      const replaced = typeof name === 'string' ? replacements[name] : undefined;
      if (!replaced || typeof repository !== 'object' || repository === null) return repository;
      return new Proxy(repository, {
        get(inner, method) {
          if (typeof method === 'string' && method in replaced) return replaced[method];
          const value: unknown = Reflect.get(inner, method);
          return typeof value === 'function' ? value.bind(inner) : value;
        },
      });
    },
  });
}
