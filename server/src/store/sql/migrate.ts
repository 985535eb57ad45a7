import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import type { SqlDriver, SqlQueryable } from './driver';

/**
 * Applies server/src/store/sql/migrations/NNN_name.sql in name order, once per database.
 *
 * The whole run is one transaction that first takes a transaction-scoped advisory lock, so
 * several servers starting together queue on the lock and each migration is applied exactly
 * once; a failing migration rolls back the whole run and the server does not start. (A
 * future migration that cannot run inside a transaction, such as CREATE INDEX CONCURRENTLY,
 * will need its own step.) Each applied file's SHA-256 is recorded: editing a migration that
 * a database already applied is refused rather than silently ignored.
 */

/** Fixed key of the migration lock ("baton-mg" in ASCII). */
export const migrationLockKey = '7089075310396534119';

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

const migrationsDir = new URL('./migrations/', import.meta.url);

export async function loadMigrations(dir: URL = migrationsDir): Promise<Migration[]> {
  const names = (await readdir(dir)).filter((n) => /^\d{3}_[a-z0-9_]+\.sql$/.test(n)).sort();
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(new URL(name, dir), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
}

/** Returns the names of the migrations this call applied. */
export async function migrate(driver: SqlDriver, migrations?: Migration[]): Promise<string[]> {
  const all = migrations ?? (await loadMigrations());
  return driver.transaction(async (q) => {
    await q.query('SELECT pg_advisory_xact_lock($1::bigint)', [migrationLockKey]);
    // Created under the lock: two servers racing on CREATE TABLE IF NOT EXISTS can collide.
    await q.exec('CREATE TABLE IF NOT EXISTS baton_migrations (name text PRIMARY KEY, checksum text NOT NULL)');
    const applied = await appliedChecksums(q);
    const pending: string[] = [];
    for (const m of all) {
      const known = applied.get(m.name);
      if (known !== undefined) {
        if (known !== m.checksum) throw new Error(`migration ${m.name} changed after it was applied (checksum ${known} in the database)`);
        continue;
      }
      await q.exec(m.sql);
      await q.query('INSERT INTO baton_migrations (name, checksum) VALUES ($1, $2)', [m.name, m.checksum]);
      pending.push(m.name);
    }
    return pending;
  });
}

async function appliedChecksums(q: SqlQueryable): Promise<Map<string, string>> {
  const rows = await q.query<{ name: string; checksum: string }>('SELECT name, checksum FROM baton_migrations');
  return new Map(rows.map((r) => [r.name, r.checksum]));
}
