/**
 * The statement batch hands timestamptz columns to codec.toMs as PostgreSQL's text
 * (server/src/store/sql/pg-statement-batch.ts), and toMs reads them with Date.parse. This holds
 * that reading to PostgreSQL's own answer, over PostgreSQL's own output: for instants from 1970
 * to 2200 with microseconds, in session time zones with whole, half-hour and negative offsets,
 * Date.parse of `t::text` is the epoch milliseconds PostgreSQL computes (floored, as the
 * microseconds are cut). On PGlite always, and on the PostgreSQL of DATABASE_URL when there is one.
 */
import { PGlite } from '@electric-sql/pglite';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toMs } from '@baton-coordination/server/store/sql/codec';
import { postgresUrl } from './support/databases';

type Query = (text: string, params: unknown[]) => Promise<{ text: string; ms: string | number }[]>;

const zones = ['UTC', 'Asia/Kolkata', 'America/St_Johns', 'Pacific/Chatham', 'America/Los_Angeles', 'Asia/Tokyo'];
/** Microseconds since 1970, up to 2200. */
const instantUs = fc.bigInt({ min: 0n, max: 7_258_118_400_000_000n });

async function agreement(query: Query): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...zones), fc.array(instantUs, { minLength: 1, maxLength: 50 }), async (zone, instants) => {
      await query(`SELECT set_config('TimeZone', $1, false) AS text, 0 AS ms`, [zone]);
      const rows = await query(
        `SELECT t::text AS text, floor(extract(epoch FROM t) * 1000)::bigint AS ms
         FROM unnest($1::bigint[]) u(us), LATERAL (SELECT 'epoch'::timestamptz + u.us * interval '1 microsecond' AS t) x`,
        [instants.map(String)],
      );
      expect(rows).toHaveLength(instants.length);
      for (const row of rows) expect([row.text, toMs(row.text)]).toEqual([row.text, Number(row.ms)]);
    }),
    { numRuns: 60 },
  );
}

describe('timestamptz as text, read by codec.toMs', () => {
  it('agrees with PGlite on every instant and time zone', async () => {
    const db = new PGlite();
    try {
      await agreement(async (text, params) => (await db.query<{ text: string; ms: number }>(text, params)).rows);
    } finally {
      await db.close();
    }
  }, 120_000);

  describe.runIf(postgresUrl())('on PostgreSQL', () => {
    let client: pg.Client;
    beforeAll(async () => {
      client = new pg.Client({ connectionString: postgresUrl() });
      await client.connect();
    });
    afterAll(async () => {
      await client?.end();
    });

    it('agrees with PostgreSQL on every instant and time zone', async () => {
      await agreement(async (text, params) => (await client.query<{ text: string; ms: string }>(text, params)).rows);
    }, 120_000);
  });
});
