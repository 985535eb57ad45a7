import { PGlite, type Transaction } from '@electric-sql/pglite';
import { lockDataDir, type DataDirLock } from '../data-dir-lock';
import { openDurablePglite } from './pglite-durable';
import type { SqlDriver, SqlParam, SqlQueryable } from './driver';

export interface PgliteDriverOptions {
  /** Directory the database persists in; in memory when absent. */
  dataDir?: string;
  /** Start from a dump of another database (PGlite.dumpDataDir): tests clone a migrated one. */
  loadDataDir?: Blob;
}

/**
 * Embedded PostgreSQL (PGlite): one connection in this process. PGlite runs query() and
 * transaction() under one mutex, so concurrent callers queue: a transaction never sees another
 * caller's statements interleaved, and a statement outside a transaction waits for the open one
 * to end. The consequence to keep in mind: inside transaction(fn), fn must use the queryable it
 * is given; calling the driver itself there would wait for its own transaction forever.
 */
export class PgliteDriver implements SqlDriver {
  readonly kind = 'pglite' as const;

  private constructor(
    private readonly db: PGlite,
    /** On disk: the directory's lock, held until close(). */
    private readonly lock?: DataDirLock,
  ) {}

  /**
   * On disk, the data directory is locked first (data-dir-lock.ts: a directory in use by another
   * process or PgliteDriver throws DataDirInUseError), then PGlite is opened durable
   * (pglite-durable.ts): every commit is fsynced.
   */
  static async open(options: PgliteDriverOptions = {}): Promise<PgliteDriver> {
    const load = options.loadDataDir === undefined ? {} : { loadDataDir: options.loadDataDir };
    if (options.dataDir === undefined) return new PgliteDriver(await PGlite.create(load));
    const lock = lockDataDir(options.dataDir);
    try {
      return new PgliteDriver((await openDurablePglite(options.dataDir, load)).db, lock);
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  /** Wraps a PGlite opened elsewhere (e.g. with other start parameters); close() closes it. */
  static fromPglite(db: PGlite): PgliteDriver {
    return new PgliteDriver(db);
  }

  async query<R>(text: string, params: readonly SqlParam[] = []): Promise<R[]> {
    return (await this.db.query<R>(text, params as unknown[])).rows;
  }

  async write(text: string, params: readonly SqlParam[] = []): Promise<void> {
    await this.db.query(text, params as unknown[]);
  }

  async exec(script: string): Promise<void> {
    await this.db.exec(script);
  }

  transaction<T>(fn: (q: SqlQueryable) => Promise<T>): Promise<T> {
    return this.db.transaction((tx) => fn(transactionQueryable(tx)));
  }

  /** A dump of the whole database, for PgliteDriver.open({ loadDataDir }). */
  async dump(): Promise<Blob> {
    return this.db.dumpDataDir('none');
  }

  async close(): Promise<void> {
    try {
      await this.db.close();
    } finally {
      this.lock?.release();
    }
  }
}

function transactionQueryable(tx: Transaction): SqlQueryable {
  return {
    query: async <R>(text: string, params: readonly SqlParam[] = []): Promise<R[]> => (await tx.query<R>(text, params as unknown[])).rows,
    // In-process: no round trip to save, so a write runs like any statement.
    write: async (text: string, params: readonly SqlParam[] = []): Promise<void> => {
      await tx.query(text, params as unknown[]);
    },
    exec: async (script: string): Promise<void> => {
      await tx.exec(script);
    },
  };
}
