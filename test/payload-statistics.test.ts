/**
 * Migration 032: ANALYZE builds no statistics for the JSON columns no statement looks inside
 * (they cost most of an ANALYZE of the journal and no plan reads them), and keeps them for every
 * column a predicate reads, `requirements` among them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '@baton-coordination/server/store/sql/migrate';
import { PgliteDriver } from '@baton-coordination/server/store/sql/pglite-driver';

const withoutStatistics = ['events.data', 'tasks.input', 'tasks.outcome', 'messages.payload', 'messages.result', 'messages.claimed', 'idempotency_keys.body'];
/** Migration 012's, for another reason: a queue's share of READY rows is never current. */
const stateWithoutStatistics = 'messages.state';

describe('statistics of payload columns', () => {
  let driver: PgliteDriver;
  beforeAll(async () => {
    driver = await PgliteDriver.open();
    await migrate(driver);
  }, 60_000);
  afterAll(async () => {
    await driver?.close();
  });

  it('sets a statistics target of 0 on exactly the payload columns of the four queue tables (and messages.state)', async () => {
    const rows = await driver.query<{ col: string }>(
      `SELECT c.relname || '.' || a.attname AS col FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
       WHERE c.relname IN ('events', 'tasks', 'messages', 'idempotency_keys') AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped AND a.attstattarget = 0
       ORDER BY 1`,
    );
    expect(rows.map((r) => r.col)).toEqual([...withoutStatistics, stateWithoutStatistics].sort());
  });

  it('ANALYZE of the journal keeps statistics for its keys and builds none for its data', async () => {
    await driver.query(
      `INSERT INTO events (space_id, type, aggregate_type, aggregate_id, scope_id, data, occurred_at)
       SELECT 's' || (g % 3), 'task.running', 'task', md5(g::text), 'scope', jsonb_build_object('n', g), now() FROM generate_series(1, 500) g`,
    );
    await driver.exec('ANALYZE events');
    const rows = await driver.query<{ attname: string }>(`SELECT attname FROM pg_stats WHERE tablename = 'events' ORDER BY attname`);
    const columns = rows.map((r) => r.attname);
    expect(columns).toEqual(expect.arrayContaining(['space_id', 'aggregate_id', 'event_id', 'occurred_at']));
    expect(columns).not.toContain('data');
  });
});
