/**
 * `npm run bench -- claim-sql [--clients N]`: admission's claim statement alone, on PostgreSQL,
 * without HTTP, events or idempotency around it. Two questions of issue 28:
 *
 * 1. **Contention.** Does a claim of 100 (claimCandidates, as admit-batch runs it) cost more when
 *    N claimers run at once than when one runs alone? Each claimer is a store transaction on its
 *    own connection; the same number of claims runs at 1 and at N claimers over the same fresh
 *    table. Buffers per claim (pg_stat_database's blks_hit + blks_read over the run's database)
 *    count PostgreSQL's work whatever the machine's load; the mean wall time says what a claimer
 *    waited, which on a shared 2-core machine is mostly waiting for a core.
 * 2. **The claimed prefix.** A READY row that is claimed leaves its entry in the READY index until
 *    VACUUM; the entry is marked dead by the first scan that passes it, but every later scan from
 *    the head of the line still reads its page. So a one-row claim (claimCandidate, as admit runs
 *    it) reads more pages the more rows were claimed since the table was last vacuumed. Measured
 *    at several such prefixes, then again after VACUUM at the same place in the line.
 *
 * The rows are written by set-based SQL (a task and its READY delivery per row, as a submit
 * writes them, without events); the message_counts triggers see them as they see a submit's.
 */
import { performance } from 'node:perf_hooks';
import type { Store } from '@baton/core';
import pg from 'pg';
import { openStore } from '../src/store/open-store';
import { createScratchDatabase } from '../src/store/sql/scratch-database';
import { BenchFailure, type Benchmark, type BenchOptions } from './harness';

const spaceId = 'bench-space';
const mailboxId = 'bench-mailbox';
const scopeId = 'bench-scope';
const batchSize = 100;
/** Claims of 100 per run of the contention phase, at every claimer count. */
const contentionClaims = 320;
/** Rows claimed since the last VACUUM, at which a one-row claim is measured. */
const prefixes = [0, 10_000, 50_000, 100_000];
/** One-row claims measured at each prefix (each moves the head by one row). */
const probeClaims = 200;


interface Measured {
  claims: number;
  rows: number;
  meanMs: number;
  buffersPerClaim: number;
}

export const claimSqlBenchmark: Benchmark = {
  description: 'admission claim statement alone on PostgreSQL: 1 vs N claimers of 100, and the claimed prefix',
  async run(options: BenchOptions) {
    const serverUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
    const scratch = await createScratchDatabase(serverUrl, 'baton_bench');
    try {
      // Migrates the scratch database once; each measurement then opens a store of its own.
      await (await openStore({ kind: 'postgres', url: scratch.url })).close();
      const db = new Database(scratch.url, options.clients + 2);
      await db.sql('ALTER TABLE messages SET (autovacuum_enabled = false); ALTER TABLE tasks SET (autovacuum_enabled = false)');
      await contention(db, options.clients);
      await claimedPrefix(db);
    } finally {
      await scratch.drop();
    }
  },
};

/**
 * The scratch database. Every step runs on connections of its own that close when it ends: a
 * backend reports its buffer counts to pg_stat_database at most once a second while busy, and
 * always when it exits, so closing them is what makes a reading after a step complete.
 */
class Database {
  constructor(
    readonly url: string,
    private readonly poolMax: number,
  ) {}

  /** Statements on a connection of their own, closed after. */
  async sql(text: string, params: unknown[] = []): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    await client.connect();
    try {
      await client.query(text, params);
    } finally {
      await client.end();
    }
  }

  /** The buffers every backend of this database has reported (hit or read). */
  async buffers(): Promise<number> {
    const client = new pg.Client({ connectionString: this.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: string }>('SELECT blks_hit + blks_read AS n FROM pg_stat_database WHERE datname = current_database()');
      return Number(rows[0]!.n);
    } finally {
      await client.end();
    }
  }

  /** Runs `work` on a store of its own, closed after (its backends exit and report). */
  async withStore<R>(work: (store: Store) => Promise<R>): Promise<R> {
    const store = await openStore({ kind: 'postgres', url: this.url, poolMax: this.poolMax });
    try {
      return await work(store);
    } finally {
      await store.close();
    }
  }
}

async function contention(db: Database, clients: number): Promise<void> {
  const rows: string[] = [];
  for (const claimers of [1, clients]) {
    await fill(db, contentionClaims * batchSize + 10_000);
    const m = await measure(db, (store) => claimConcurrently(store, claimers, contentionClaims / claimers));
    const perClaim = m.rows / m.claims;
    rows.push(`| ${claimers} | ${m.claims} | ${perClaim.toFixed(1)} | ${m.meanMs.toFixed(2)} | ${m.buffersPerClaim.toFixed(0)} | ${(m.buffersPerClaim / perClaim).toFixed(1)} |`);
  }
  console.log('\n### Claims of 100 (claimCandidates), 1 claimer and N at once\n');
  console.log('| claimers | claims | rows/claim | mean ms | buffers/claim | buffers/row |');
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const row of rows) console.log(row);
}

async function claimedPrefix(db: Database): Promise<void> {
  // Each VACUUM below clears the prefix, so every prefix is claimed afresh from there.
  await fill(db, prefixes.reduce((sum, p) => sum + p, 0) + prefixes.length * 2 * probeClaims + 10_000);
  let claimedSoFar = 0;
  const rows: string[] = [];
  for (const prefix of prefixes) {
    // Claims of 100 move the head of the line to `prefix` rows claimed since the fill's VACUUM.
    await db.withStore(async (store) => {
      while (claimedSoFar < prefix) {
        const claimed = (await store.transaction((tx) => tx.messages.claimCandidates(request(batchSize)))).length;
        if (claimed === 0) throw new BenchFailure('the line ran dry: fill more rows');
        claimedSoFar += claimed;
      }
    });
    const before = await measure(db, (store) => claimOneByOne(store, probeClaims));
    await db.sql('VACUUM messages');
    const after = await measure(db, (store) => claimOneByOne(store, probeClaims));
    claimedSoFar = after.rows; // the VACUUM cleared the prefix before these
    rows.push(`| ${prefix.toLocaleString('en-US')} | ${before.meanMs.toFixed(3)} | ${before.buffersPerClaim.toFixed(1)} | ${after.meanMs.toFixed(3)} | ${after.buffersPerClaim.toFixed(1)} |`);
  }
  console.log('\n### One-row claims (claimCandidate) after N rows were claimed since the last VACUUM\n');
  console.log('| rows claimed since VACUUM | mean ms | buffers/claim | after VACUUM: mean ms | buffers/claim |');
  console.log('| ---: | ---: | ---: | ---: | ---: |');
  for (const row of rows) console.log(row);
}

/** `total` READY task deliveries in one mailbox and scope, each with its PENDING task; vacuumed and analyzed. */
async function fill(db: Database, total: number): Promise<void> {
  await db.sql('TRUNCATE messages, tasks, message_counts, task_group_members, task_subscribers');
  await db.sql(
    `INSERT INTO tasks (space_id, id, task_key, fingerprint, mailbox_id, scope_id, state, input, requirements, attempts, message_id, created_at, updated_at)
     SELECT $1, 't' || g, 'k' || g, 'f', $2, $3, 'PENDING', '{"n":1}', '{"pools":[],"quotas":[],"budgets":[]}', 0, 'm' || lpad(g::text, 9, '0'), now(), now() FROM generate_series(1, $4::int) g`,
    [spaceId, mailboxId, scopeId, total],
  );
  await db.sql(
    `INSERT INTO messages (space_id, id, mailbox_id, scope_id, payload, state, attempt, created_at, updated_at, task_id)
     SELECT $1, 'm' || lpad(g::text, 9, '0'), $2, $3, '{"n":1}', 'READY', 0, now(), now(), 't' || g FROM generate_series(1, $4::int) g`,
    [spaceId, mailboxId, scopeId, total],
  );
  await db.sql('VACUUM ANALYZE messages');
  await db.sql('VACUUM ANALYZE tasks');
}

/** Runs `work` on a store of its own and reads the database's buffers around it (autovacuum is off for these tables). */
async function measure(db: Database, work: (store: Store) => Promise<{ claims: number; rows: number; ms: number }>): Promise<Measured> {
  const start = await db.buffers();
  const done = await db.withStore(work);
  const end = await db.buffers();
  if (done.claims === 0) throw new BenchFailure('no claim ran');
  return { claims: done.claims, rows: done.rows, meanMs: done.ms / done.claims, buffersPerClaim: (end - start) / done.claims };
}

let tokenCounter = 0;
const tokenHashes = (n: number): string[] => Array.from({ length: n }, () => `bench-token-${++tokenCounter}`);

function request(n: number) {
  const nowMs = Date.now();
  return { spaceId, mailboxId, scopeIds: [scopeId], holder: 'bench', holderSession: 'bench-session', leaseExpiresAt: nowMs + 3_600_000, nowMs, afterSeq: 0, tokenHashes: tokenHashes(n), tokenHash: `bench-token-${++tokenCounter}`, unlessGated: true };
}

async function claimBatch(store: Store): Promise<{ rows: number; ms: number }> {
  const started = performance.now();
  const candidates = await store.transaction((tx) => tx.messages.claimCandidates(request(batchSize)));
  return { rows: candidates.length, ms: performance.now() - started };
}

/** `claimers` loops of `each` claims of 100 at once; every message is claimed once at most. */
async function claimConcurrently(store: Store, claimers: number, each: number): Promise<{ claims: number; rows: number; ms: number }> {
  const seen = new Set<string>();
  let ms = 0;
  const loop = async (): Promise<void> => {
    for (let i = 0; i < each; i++) {
      const started = performance.now();
      const candidates = await store.transaction((tx) => tx.messages.claimCandidates(request(batchSize)));
      ms += performance.now() - started;
      for (const c of candidates) {
        if (seen.has(c.message.id)) throw new BenchFailure(`message ${c.message.id} claimed twice`);
        seen.add(c.message.id);
      }
    }
  };
  await Promise.all(Array.from({ length: claimers }, loop));
  return { claims: claimers * each, rows: seen.size, ms };
}

async function claimOneByOne(store: Store, claims: number): Promise<{ claims: number; rows: number; ms: number }> {
  let rows = 0;
  let ms = 0;
  for (let i = 0; i < claims; i++) {
    const started = performance.now();
    const candidate = await store.transaction((tx) => tx.messages.claimCandidate(request(1)));
    ms += performance.now() - started;
    if (candidate === undefined) throw new BenchFailure('the line ran dry: fill more rows');
    rows += 1;
  }
  return { claims, rows, ms };
}
