/**
 * What the journal's transaction-horizon guard costs (docs/event-journal.md), on PostgreSQL:
 *
 *   npx tsx server/bench/event-journal.ts [--seconds N] [--writers N]
 *
 * Uses DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) to create a scratch
 * database, dropped afterwards. Prints:
 *  1. appends/s of short write transactions, as built (no serialisation) and with appends
 *     serialised per space (the alternative design: an advisory lock held from append to commit);
 *  2. listAfter latency (page of 100) with the horizon guard and without it (event_id order);
 *  3. visibility lag: commit to first seen by a reader polling with the guard, and without it,
 *     and how many events the unguarded reader skipped meanwhile.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Budget, JournalEvent } from '@baton/core';
import type { SqlQueryable } from '../src/store/sql/driver';
import { migrate } from '../src/store/sql/migrate';
import { PgDriver } from '../src/store/sql/pg-driver';
import { createScratchDatabase } from '../src/store/sql/scratch-database';
import { sqlRepositories } from '../src/store/sql/repositories/index';
import { readJournal, type JournalReadMode } from '../src/store/sql/repositories/events';

const T0 = 1_700_000_000_000;

interface Options {
  seconds: number;
  writers: number;
}

function parseArgs(args: string[]): Options {
  const options: Options = { seconds: 5, writers: 16 };
  for (let i = 0; i < args.length; i += 2) {
    const value = Number(args[i + 1]);
    if (!Number.isInteger(value) || value < 1 || value > 600) throw new Error(`${args[i]} needs an integer from 1 to 600`);
    if (args[i] === '--seconds') options.seconds = value;
    else if (args[i] === '--writers') options.writers = value;
    else throw new Error(`unknown flag ${args[i]} (flags: --seconds N, --writers N)`);
  }
  return options;
}

// ---------------------------------------------------------------------------------------------
// Scratch database

async function withScratchDatabase<T>(serverUrl: string, work: (url: string) => Promise<T>): Promise<T> {
  const scratch = await createScratchDatabase(serverUrl, 'baton_bench');
  try {
    return await work(scratch.url);
  } finally {
    await scratch.drop();
  }
}

// ---------------------------------------------------------------------------------------------
// Writers: a transaction shaped like a settle (a budget row, the event, the stored reply).

function budgetRow(spaceId: string): Budget {
  const id = randomUUID();
  return { id, spaceId, name: id, currency: 'USD', scale: 2, limitMinor: 0n, availableMinor: 0n, reservedMinor: 0n, settledMinor: 0n, createdAt: T0, updatedAt: T0 };
}

async function writeOnce(q: SqlQueryable, b: Budget, serialised: boolean, marker: string): Promise<void> {
  const tx = sqlRepositories(q);
  const row = (await tx.budgets.get(b.spaceId, b.id, { forUpdate: true }))!;
  await tx.budgets.update({ ...row, updatedAt: row.updatedAt + 1 });
  // The alternative design: one appender per space at a time, until it commits.
  if (serialised) await q.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [b.spaceId]);
  await tx.events.append(b.spaceId, T0, [{ type: 'bench.appended', aggregateType: 'bench', aggregateId: marker, scopeId: null, data: {} }]);
  await tx.idempotency.put({ spaceId: b.spaceId, key: marker, fingerprint: 'f', statusCode: 200, body: { ok: true }, createdAt: T0 });
}

interface WriteLoad {
  transactions: number;
  /** performance.now() at each commit, by marker. */
  committedAt: Map<string, number>;
}

async function runWriters(driver: PgDriver, spaceId: string, writers: number, seconds: number, serialised: boolean): Promise<WriteLoad> {
  const budgets = Array.from({ length: writers }, () => budgetRow(spaceId));
  for (const b of budgets) await driver.transaction((q) => sqlRepositories(q).budgets.insert(b));
  const committedAt = new Map<string, number>();
  const deadline = performance.now() + seconds * 1000;
  let transactions = 0;
  await Promise.all(
    budgets.map(async (b) => {
      while (performance.now() < deadline) {
        const marker = randomUUID();
        await driver.transaction((q) => writeOnce(q, b, serialised, marker));
        committedAt.set(marker, performance.now());
        transactions++;
      }
    }),
  );
  return { transactions, committedAt };
}

// ---------------------------------------------------------------------------------------------
// Readers

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

const fmt = (ms: number): string => `${ms.toFixed(2)} ms`;

function summary(samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  return `p50 ${fmt(percentile(sorted, 50))}, p99 ${fmt(percentile(sorted, 99))} (n=${sorted.length})`;
}

/** Fills a space with `count` committed events in one statement (one transaction). */
async function prefill(driver: PgDriver, spaceId: string, count: number): Promise<void> {
  await driver.query(
    `INSERT INTO events (space_id, type, aggregate_type, aggregate_id, scope_id, data, occurred_at)
     SELECT $1, 'bench.prefilled', 'bench', g::text, NULL, '{"n": 1}'::jsonb, '2024-01-01T00:00:00Z' FROM generate_series(1, $2::int) g`,
    [spaceId, count],
  );
}

/** Every cursor a reader of `mode` could hold in the space, to start pages from. */
async function cursors(driver: PgDriver, spaceId: string, mode: JournalReadMode): Promise<string[]> {
  const events = await readJournal(driver, spaceId, '0', 1_000_000, mode);
  return events.map((e) => e.eventId);
}

async function pageLatency(driver: PgDriver, spaceId: string, mode: JournalReadMode, starts: string[], samples: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < samples; i++) {
    const after = starts[(i * 7919) % starts.length]!;
    const t = performance.now();
    await readJournal(driver, spaceId, after, 100, mode);
    out.push(performance.now() - t);
  }
  return out;
}

interface Follow {
  lags: number[];
  seen: Set<string>;
}

/** Follows the cursor until stopped, noting when each marker was first seen. */
async function follow(driver: PgDriver, spaceId: string, mode: JournalReadMode, load: WriteLoad, stopped: () => boolean): Promise<Follow> {
  const seenAt = new Map<string, number>();
  let cursor = '0';
  for (let empty = 0; !stopped() || empty < 3; ) {
    const page: JournalEvent[] = await readJournal(driver, spaceId, cursor, 500, mode);
    const now = performance.now();
    for (const e of page) if (!seenAt.has(e.aggregateId)) seenAt.set(e.aggregateId, now);
    cursor = page.at(-1)?.eventId ?? cursor;
    empty = page.length === 0 && stopped() ? empty + 1 : 0;
  }
  const lags = [...seenAt].flatMap(([marker, at]) => {
    const committed = load.committedAt.get(marker);
    return committed === undefined ? [] : [Math.max(0, at - committed)];
  });
  return { lags, seen: new Set(seenAt.keys()) };
}

// ---------------------------------------------------------------------------------------------

async function appendThroughput(driver: PgDriver, options: Options): Promise<void> {
  for (const serialised of [false, true]) {
    const load = await runWriters(driver, randomUUID(), options.writers, options.seconds, serialised);
    const label = serialised ? 'serialised per space (advisory lock to commit)' : 'as built (horizon guard on read)';
    console.log(`  appends, ${options.writers} writers, one space, ${label}: ${Math.round(load.transactions / options.seconds)} tx/s`);
  }
}

async function readLatency(driver: PgDriver, options: Options): Promise<void> {
  const spaceId = randomUUID();
  await prefill(driver, spaceId, 100_000);
  for (let i = 0; i < 10; i++) await prefill(driver, randomUUID(), 10_000);
  await driver.query('ANALYZE events');
  const starts = { horizon: await cursors(driver, spaceId, 'horizon'), unguarded: await cursors(driver, spaceId, 'unguarded') };
  for (const mode of ['horizon', 'unguarded'] as const) {
    console.log(`  listAfter(limit 100) of 100k events, idle, ${mode.padEnd(9)}: ${summary(await pageLatency(driver, spaceId, mode, starts[mode], 2000))}`);
  }
  let stop = false;
  const writing = runWriters(driver, randomUUID(), options.writers, options.seconds, false).finally(() => (stop = true));
  const busy = { horizon: [] as number[], unguarded: [] as number[] };
  while (!stop) {
    busy.horizon.push(...(await pageLatency(driver, spaceId, 'horizon', starts.horizon, 50)));
    busy.unguarded.push(...(await pageLatency(driver, spaceId, 'unguarded', starts.unguarded, 50)));
  }
  for (const mode of ['horizon', 'unguarded'] as const) {
    console.log(`  listAfter(limit 100), ${options.writers} writers busy elsewhere, ${mode.padEnd(9)}: ${summary(busy[mode])}`);
  }
  await writing;
}

async function visibilityLag(driver: PgDriver, options: Options): Promise<void> {
  for (const mode of ['horizon', 'unguarded'] as const) {
    const spaceId = randomUUID();
    let stopped = false;
    const load: WriteLoad = { transactions: 0, committedAt: new Map() };
    const reading = follow(driver, spaceId, mode, load, () => stopped);
    const written = await runWriters(driver, spaceId, options.writers, options.seconds, false);
    for (const [k, v] of written.committedAt) load.committedAt.set(k, v);
    stopped = true;
    const { lags, seen } = await reading;
    const skipped = [...written.committedAt.keys()].filter((m) => !seen.has(m)).length;
    console.log(`  commit-to-visible, ${options.writers} writers, ${mode.padEnd(9)}: ${summary(lags)}; skipped ${skipped} of ${written.committedAt.size}`);
  }
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const serverUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  await withScratchDatabase(serverUrl, async (url) => {
    const driver = new PgDriver(url, { max: options.writers + 4 });
    try {
      await migrate(driver);
      // The unguarded variant orders by event_id: give it its index, so it is measured fairly.
      await driver.exec('CREATE INDEX events_by_id ON events (space_id, event_id)');
      const [{ version }] = (await driver.query<{ version: string }>('SELECT version()')) as [{ version: string }];
      console.log(`event journal bench on ${version.split(' on ')[0]}, ${options.seconds}s per load phase`);
      await appendThroughput(driver, options);
      await readLatency(driver, options);
      await visibilityLag(driver, options);
    } finally {
      await driver.close();
    }
  });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
