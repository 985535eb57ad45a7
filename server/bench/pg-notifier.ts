/**
 * What cross-server wake-ups cost (docs/architecture-notes.md). Standalone:
 * `DATABASE_URL=postgres://… npx tsx server/bench/pg-notifier.ts [seconds]`.
 *
 * 1. pg_notify round trip on a pooled connection (what one publish costs the database).
 * 2. Wake latency: notify on notifier A until a wait on notifier B resolves.
 * 3. Commits/s of small write transactions, each followed by notify() as NotifyingStore does,
 *    with a LocalNotifier and with a PgNotifier, and how many pg_notify ran per commit.
 */
import { performance } from 'node:perf_hooks';
import { LocalNotifier, SystemClock, type Notifier } from '@baton/core';
import { PgNotifier } from '../src/notify/pg-notifier';
import { PgDriver } from '../src/store/sql/pg-driver';
import { createScratchDatabase } from '../src/store/sql/scratch-database';

const serverUrl = process.env.DATABASE_URL;
if (!serverUrl) throw new Error('set DATABASE_URL');
const seconds = Number(process.argv[2] ?? 3);
const clock = new SystemClock();

const pct = (xs: number[], p: number): string => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!.toFixed(3);
};

async function commitsPerSecond(driver: PgDriver, notifier: Notifier, clients: number): Promise<number> {
  let commits = 0;
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      while (performance.now() < until) {
        await driver.transaction((q) => q.query('INSERT INTO bench_rows (client) VALUES ($1)', [c]));
        commits++;
        notifier.notify(`barrier:${c}`);
      }
    }),
  );
  return commits / seconds;
}

async function main(): Promise<void> {
  const db = await createScratchDatabase(serverUrl!, 'baton_bench');
  const driver = new PgDriver(db.url, { max: 10 });
  const a = await PgNotifier.start({ url: db.url, clock, ...(process.env.PUBLISH_ON_STORE_POOL ? { publisher: driver } : {}) });
  const b = await PgNotifier.start({ url: db.url, clock });
  try {
    await driver.exec('CREATE TABLE bench_rows (id bigserial PRIMARY KEY, client int NOT NULL)');

    const rtt: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const t = performance.now();
      await driver.query('SELECT pg_notify($1, $2)', ['baton_bench', `{"s":"x","t":["barrier:${i}"]}`]);
      rtt.push(performance.now() - t);
    }
    console.log(`pg_notify round trip (pooled): median ${pct(rtt, 50)} ms, p99 ${pct(rtt, 99)} ms`);

    const wake: number[] = [];
    for (let i = 0; i < 500; i++) {
      const w = b.wait(`barrier:w${i}`, 5_000);
      const t = performance.now();
      a.notify(`barrier:w${i}`);
      await w;
      wake.push(performance.now() - t);
    }
    console.log(`cross-server wake (notify on A -> wait on B resolves): median ${pct(wake, 50)} ms, p99 ${pct(wake, 99)} ms`);

    for (const clients of [1, 16]) {
      const local = await commitsPerSecond(driver, new LocalNotifier(clock), clients);
      const before = a.stats.published;
      const withPg = await commitsPerSecond(driver, a, clients);
      await a.flushNow();
      const publishes = a.stats.published - before;
      console.log(
        `${clients} client(s): ${local.toFixed(0)} commits/s with LocalNotifier, ${withPg.toFixed(0)} with PgNotifier ` +
          `(${((withPg / local - 1) * 100).toFixed(1)}%), ${(publishes / (withPg * seconds)).toFixed(2)} pg_notify per commit`,
      );
    }
  } finally {
    await a.close();
    await b.close();
    await driver.close();
    await db.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
