import { randomUUID } from 'node:crypto';
import pg from 'pg';

export interface ScratchDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * A fresh, uniquely named database on the PostgreSQL server at `serverUrl`, for tests and
 * benchmarks. The server URL is used only to CREATE and DROP this one database: no existing
 * database is ever written.
 */
export async function createScratchDatabase(serverUrl: string, prefix: 'baton_test' | 'baton_bench'): Promise<ScratchDatabase> {
  const name = `${prefix}_${randomUUID().replaceAll('-', '')}`;
  await onServer(serverUrl, `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    // FORCE: a run that failed half-way may have left connections open.
    drop: () => onServer(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

async function onServer(url: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}
