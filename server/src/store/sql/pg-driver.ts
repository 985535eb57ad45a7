import pg from 'pg';
import type { SqlDriver, SqlParam, SqlQueryable } from './driver';

export interface PgDriverOptions {
  /** Pool size; default 10. */
  max?: number;
  /**
   * Where connection errors that no query is waiting for go (an idle pooled client whose
   * server went away, a checked-out client between statements). Without a listener Node
   * would crash the process on them. Default: one line on stderr.
   */
  onConnectionError?: (error: Error) => void;
}

const stderrConnectionError = (error: Error): void => {
  process.stderr.write(`baton: postgres connection error: ${error.message}\n`);
};

/** PostgreSQL through a `pg` Pool. */
export class PgDriver implements SqlDriver {
  readonly kind = 'postgres' as const;
  private readonly pool: pg.Pool;
  private readonly onConnectionError: (error: Error) => void;

  constructor(url: string, options: PgDriverOptions = {}) {
    this.onConnectionError = options.onConnectionError ?? stderrConnectionError;
    this.pool = new pg.Pool({ connectionString: url, max: options.max ?? 10 });
    this.pool.on('error', (error) => this.onConnectionError(error));
  }

  async query<R>(text: string, params: readonly SqlParam[] = []): Promise<R[]> {
    const result = await this.pool.query(text, params as unknown[]);
    return result.rows as R[];
  }

  async exec(script: string): Promise<void> {
    await this.pool.query(script);
  }

  async transaction<T>(fn: (q: SqlQueryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    // The pool only listens for errors of idle clients; while this one is checked out an
    // 'error' event with no listener would be thrown as an uncaught exception.
    const onError = (error: Error): void => this.onConnectionError(error);
    client.on('error', onError);
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await fn(clientQueryable(client));
      await client.query('COMMIT');
      return result;
    } catch (error) {
      broken = await rollback(client);
      throw error;
    } finally {
      client.off('error', onError);
      // A client whose ROLLBACK failed is in an unknown state: destroy it rather than reuse it.
      client.release(broken);
    }
  }

  /**
   * Resolves once every connection is closed. pool.end() alone resolves as soon as it has
   * asked them to close, and a DROP DATABASE right after would then cut them off mid-goodbye.
   */
  async close(): Promise<void> {
    let open = this.pool.totalCount;
    const allRemoved = new Promise<void>((resolve) => {
      if (open === 0) resolve();
      this.pool.on('remove', () => {
        if (--open === 0) resolve();
      });
    });
    await this.pool.end();
    await allRemoved;
  }
}

function clientQueryable(client: pg.PoolClient): SqlQueryable {
  return {
    query: async <R>(text: string, params: readonly SqlParam[] = []): Promise<R[]> => (await client.query(text, params as unknown[])).rows as R[],
    exec: async (script: string): Promise<void> => {
      await client.query(script);
    },
  };
}

/** Returns the error when the connection cannot even roll back (it is then discarded). */
async function rollback(client: pg.PoolClient): Promise<Error | undefined> {
  try {
    await client.query('ROLLBACK');
    return undefined;
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}
