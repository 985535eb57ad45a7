import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, inject } from 'vitest';
import { MemoryStore, type JournalEvent, type Store, type Tx } from '@baton/core';
import { openStore } from '@baton-coordination/server/store/open-store';
import { migrate } from '@baton-coordination/server/store/sql/migrate';
import { PgliteDriver } from '@baton-coordination/server/store/sql/pglite-driver';
import { createScratchDatabase, type ScratchDatabase } from '@baton-coordination/server/store/sql/scratch-database';
import { SqlStore } from '@baton-coordination/server/store/sql/sql-store';

/**
 * Databases for tests: in-memory PGlite always, PostgreSQL when DATABASE_URL is set or the
 * global setup (test/support/global-setup.ts) started a container.
 */

declare module 'vitest' {
  export interface ProvidedContext {
    /** Set by global-setup.ts when it started a PostgreSQL container. */
    postgresUrl?: string;
  }
}

export function postgresUrl(): string | undefined {
  return process.env.DATABASE_URL || inject('postgresUrl') || undefined;
}

export type TestDatabase = ScratchDatabase;

/** A fresh, uniquely named database on the PostgreSQL server of postgresUrl(). */
export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = postgresUrl();
  if (!serverUrl) throw new Error('createTestDatabase: no PostgreSQL (set DATABASE_URL, or let the global setup start a container)');
  return createScratchDatabase(serverUrl, 'baton_test');
}

export interface OpenedStore {
  store: Store;
  /** Closes the store and drops what it created (the PostgreSQL database). */
  close(): Promise<void>;
}

export interface StoreTarget {
  name: 'memory' | 'pglite' | 'postgres';
  /**
   * Whether two transactions can be open at once. Memory and PGlite run transactions one
   * after another, so a second one waits for the first to end instead of meeting its locks.
   */
  concurrentTransactions: boolean;
  open(): Promise<OpenedStore>;
}

/**
 * memory, pglite (in memory), and postgres when a server is available: run suites on each.
 * BATON_TEST_STORES (a comma-separated list of names) narrows them: mutation testing of core
 * (vitest.stryker.config.ts) runs the suites on the memory store only.
 */
export function storeTargets(): StoreTarget[] {
  const targets: StoreTarget[] = [
    { name: 'memory', concurrentTransactions: false, open: async () => opened(new MemoryStore()) },
    { name: 'pglite', concurrentTransactions: false, open: openPglite },
  ];
  if (postgresUrl()) targets.push({ name: 'postgres', concurrentTransactions: true, open: openPostgres });
  const wanted = process.env.BATON_TEST_STORES?.split(',').map((name) => name.trim());
  return wanted ? targets.filter((target) => wanted.includes(target.name)) : targets;
}

function opened(store: Store, after: () => Promise<void> = async () => undefined): OpenedStore {
  return {
    store,
    close: async () => {
      try {
        await store.close();
      } finally {
        await after();
      }
    },
  };
}

async function openPostgres(): Promise<OpenedStore> {
  const db = await createTestDatabase();
  try {
    return opened(await openStore({ kind: 'postgres', url: db.url }), db.drop);
  } catch (error) {
    await db.drop();
    throw error;
  }
}

/**
 * Starting PGlite costs about 2.5 s (initdb); loading a dump of an already migrated one about
 * 0.5 s. So each test worker migrates one database once and every open() clones it; migrate()
 * runs again on the clone and must find nothing to do.
 */
let migratedPglite: Promise<Blob> | undefined;

async function openPglite(): Promise<OpenedStore> {
  migratedPglite ??= dumpMigratedPglite();
  const driver = await PgliteDriver.open({ loadDataDir: await migratedPglite });
  const applied = await migrate(driver);
  if (applied.length > 0) throw new Error(`pglite clone was not fully migrated: applied ${applied.join(', ')}`);
  return opened(new SqlStore(driver));
}

async function dumpMigratedPglite(): Promise<Blob> {
  const driver = await PgliteDriver.open();
  try {
    await migrate(driver);
    return await driver.dump();
  } finally {
    await driver.close();
  }
}

/** An organization (TEAM plan) and one space of it: the tenant a store conformance test writes into. */
export async function insertTenant(tx: Tx, orgId: string, spaceId: string, atMs: number): Promise<void> {
  await tx.orgs.insert({ id: orgId, name: 'o', plan: 'TEAM', limits: null, createdAt: atMs, updatedAt: atMs });
  await tx.spaces.insert({ id: spaceId, orgId, name: 's', limits: null, createdAt: atMs, updatedAt: atMs });
}

/** The store and tenant of the test running: read them inside a test or hook, not where the suite is defined. */
export interface TenantStore {
  readonly store: Store;
  readonly orgId: string;
  readonly spaceId: string;
  /** Another organization with one space, in the same store, for tests that keep spaces apart: the space's id. */
  otherSpace(): Promise<string>;
}

/**
 * Registers, in the calling suite, the hooks that give each test a fresh store of `target`
 * with one tenant (insertTenant at `atMs`), so no test sees another's rows, and that close it
 * after the test even when the test or the set-up failed. The getters answer for the test
 * running, so a suite reads them per test rather than copying them once.
 */
export function useTenantStore(target: StoreTarget, atMs: number): TenantStore {
  let current: { opened: OpenedStore; orgId: string; spaceId: string } | undefined;
  const now = (): { opened: OpenedStore; orgId: string; spaceId: string } => {
    if (!current) throw new Error('useTenantStore: the store exists only while a test runs (read it inside a test or hook)');
    return current;
  };
  beforeEach(async () => {
    const fresh = { opened: await target.open(), orgId: randomUUID(), spaceId: randomUUID() };
    current = fresh;
    await fresh.opened.store.transaction((tx) => insertTenant(tx, fresh.orgId, fresh.spaceId, atMs));
  });
  afterEach(async () => {
    const ended = current;
    current = undefined;
    await ended?.opened.close();
  });
  return {
    get store() {
      return now().opened.store;
    },
    get orgId() {
      return now().orgId;
    },
    get spaceId() {
      return now().spaceId;
    },
    async otherSpace() {
      const spaceId = randomUUID();
      await now().opened.store.transaction((tx) => insertTenant(tx, randomUUID(), spaceId, atMs));
      return spaceId;
    },
  };
}

/**
 * The space's journal once `ready` holds (or after about 5 s, for the test to fail on). On
 * PostgreSQL an event is readable only when no older transaction of the whole server is still
 * open (docs/event-journal.md), and other test files share the server, so a reader polls, as a
 * real client does.
 */
export async function journalWhen(store: Store, spaceId: string, ready: (events: JournalEvent[]) => boolean): Promise<JournalEvent[]> {
  for (let attempt = 0; ; attempt++) {
    const events = await store.read((tx) => tx.events.listAfter(spaceId, '0', 1_000));
    if (ready(events) || attempt >= 100) return events;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
