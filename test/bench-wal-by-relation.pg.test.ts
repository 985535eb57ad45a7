/**
 * The cost benchmark's WAL reading (server/bench/cost/wal-by-relation.ts): what a span of WAL
 * wrote, by relation and record type. Known writes are counted back exactly: one heap INSERT
 * per row, one btree INSERT_LEAF per index entry, a HOT update with no index entry, and nothing
 * of what came before the span.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { walByRelation, walPosition, type WalPart } from '../server/bench/cost/wal-by-relation';
import { createTestDatabase, postgresUrl, type TestDatabase } from './support/databases';

const recordsOf = (parts: WalPart[], relation: string, recordType: string): number =>
  parts.filter((p) => p.relation === relation && p.recordType === recordType).reduce((n, p) => n + p.records, 0);

describe.runIf(postgresUrl())('WAL by relation (pg_walinspect)', () => {
  let db: TestDatabase;
  let client: pg.Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
    // fillfactor 50 leaves room on the page, so the update below stays HOT on it.
    await client.query('CREATE TABLE jobs (id int PRIMARY KEY, state text NOT NULL, note text) WITH (fillfactor = 50)');
    await client.query('CREATE INDEX jobs_by_state ON jobs (state)');
  });

  afterAll(async () => {
    await client?.end();
    await db?.drop();
  });

  it('counts each row and index entry a span wrote, and nothing written before it', async () => {
    await client.query(`INSERT INTO jobs SELECT g, 'old', null FROM generate_series(1, 7) g`);
    const from = await walPosition(db.url);
    await client.query(`INSERT INTO jobs SELECT g, 'new', null FROM generate_series(101, 120) g`);
    await client.query(`UPDATE jobs SET note = 'hot' WHERE id = 101`);
    const parts = await walByRelation(db.url, from, await walPosition(db.url));

    expect(recordsOf(parts, 'jobs', 'Heap INSERT') + recordsOf(parts, 'jobs', 'Heap INSERT+INIT')).toBe(20);
    expect(recordsOf(parts, 'jobs_pkey', 'Btree INSERT_LEAF')).toBe(20);
    expect(recordsOf(parts, 'jobs_by_state', 'Btree INSERT_LEAF')).toBe(20);
    expect(recordsOf(parts, 'jobs', 'Heap HOT_UPDATE')).toBe(1);
    expect(recordsOf(parts, 'jobs', 'Heap UPDATE')).toBe(0);
    expect(parts.every((p) => p.records > 0 && p.bytes > 0)).toBe(true);
  });
});
