/**
 * `npx tsx --conditions=@baton/source server/bench/watch-latency.ts`: wake-up latencies across
 * two servers on one PostgreSQL (docs/benchmarks.md, "Watch and webhook latency").
 *
 * Two Baton servers (A and B) in this process, each with its own store pool and its own
 * PgNotifier on one scratch database (created on DATABASE_URL, default the local server, and
 * dropped at the end), each listening on a loopback port; the bench talks to them over HTTP.
 *
 * (a) Watch wake: a GET /watch?types=pool.created long poll parked on B (or on A, for
 *     comparison); a pool create commits through A. Latency: from A's reply to the create
 *     (acknowledged, body read) to B's watch reply (body read). Also when B's notifier heard
 *     the commit (PgNotifier hop), and how many journal reads the watch made once woken (more
 *     than one: it found nothing at first and re-read on server/src/http/horizon-rechecks.ts).
 *     Once more with two clients creating budgets in another space meanwhile (their
 *     transactions move the horizon, server-wide, but wake nothing parked here).
 * (b) Webhook lag: a destination (`pool.*`) pointing at a receiver on 127.0.0.1, a started
 *     dispatcher on A or on B, pool creates through A one at a time, then a burst. Lag: from
 *     the create's ack to the receiver having the request, and from the event's occurredAt.
 *     A delivery that came after a dispatcher read that found nothing is counted: the event
 *     was held back by the horizon, and the dispatcher waited for the next wake or interval.
 * (c) Idle watchers: pool creates through A by a few concurrent clients for some seconds, with
 *     0 and with 100 watches parked on A whose filter (`types=group.decided`) matches nothing
 *     the loop commits; alternated, ratio quoted.
 *
 * A pg_stat_activity sampler names transactions that held an xid (the horizon) for 50 ms or more.
 *
 * Client, both servers and the receiver share one process (and its event loop): every figure
 * includes that scheduling, as it includes the database round trips.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { spaceTopic, SystemClock, type Store } from '@baton/core';
import pg from 'pg';
import { Pool } from 'undici';
import { createBaton, type Baton } from '../src/host/baton';
import { PgNotifier } from '../src/notify/pg-notifier';
import { openStore } from '../src/store/open-store';
import { createScratchDatabase } from '../src/store/sql/scratch-database';

const serverUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const watchSamples = Number(process.env.WATCH_SAMPLES ?? 400);
const webhookSamples = Number(process.env.WEBHOOK_SAMPLES ?? 200);
const webhookLoadedSamples = Number(process.env.WEBHOOK_LOADED_SAMPLES ?? 100);
const burstSize = Number(process.env.WEBHOOK_BURST ?? 200);
const loopSeconds = Number(process.env.LOOP_SECONDS ?? 3);
const loopRounds = Number(process.env.LOOP_ROUNDS ?? 6);
const loopClients = 4;
const idleWatchers = 100;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function stats(xs: number[]): { n: number; p50: string; p90: string; p99: string; max: string; mean: string } {
  const s = [...xs].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!.toFixed(1);
  return { n: s.length, p50: at(50), p90: at(90), p99: at(99), max: s.at(-1)!.toFixed(1), mean: (s.reduce((a, b) => a + b, 0) / s.length).toFixed(1) };
}

const rows: string[] = [];
function row(label: string, xs: number[], note = ''): void {
  const s = stats(xs);
  const line = `| ${label} | ${s.n} | ${s.p50} | ${s.p90} | ${s.p99} | ${s.max} | ${s.mean} | ${note} |`;
  rows.push(line);
  console.log(line);
}

// ---------------------------------------------------------------------------------------------
// Servers and HTTP

interface Server {
  name: string;
  baton: Baton;
  store: Store;
  notifier: PgNotifier;
  baseUrl: string;
  /** Journal reads through this server's store (watches, dispatcher). */
  reads: number;
  /** Of them, those that returned an empty list (the dispatcher's listAfter found nothing). */
  emptyReads: number;
}

async function startServer(name: string, url: string, adminToken: string): Promise<Server> {
  const clock = new SystemClock();
  const store = await openStore({ kind: 'postgres', url });
  const notifier = await PgNotifier.start({ url, clock });
  const baton = await createBaton({ store, clock, adminToken, notifier, webhooks: { secretKey: Buffer.alloc(32, 5), allowPrivate: true } });
  const baseUrl = await baton.app.listen({ port: 0, host: '127.0.0.1' });
  const server: Server = { name, baton, store, notifier, baseUrl, reads: 0, emptyReads: 0 };
  const wrapped = baton.deps.store;
  const read = wrapped.read.bind(wrapped);
  wrapped.read = async (work) => {
    server.reads++;
    const result = await read(work);
    if (Array.isArray(result) && result.length === 0) server.emptyReads++;
    return result;
  };
  return server;
}

async function stopServer(s: Server): Promise<void> {
  await s.baton.webhooks.stop();
  await s.baton.drainAndClose();
  await s.store.close();
  await s.notifier.close();
}

type Call = (method: 'GET' | 'POST', path: string, body?: unknown, signal?: AbortSignal) => Promise<{ status: number; body: any }>;

function caller(http: Pool, prefix: string, token: string): Call {
  return async (method, path, body, signal) => {
    const res = await http.request({
      method,
      path: prefix + path,
      headers: {
        authorization: `Bearer ${token}`,
        ...(method === 'POST' ? { 'idempotency-key': randomUUID() } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(signal ? { signal } : {}),
    });
    const text = await res.body.text();
    return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
  };
}

const newPool = (url: string, connections: number) => new Pool(url, { connections, pipelining: 1, headersTimeout: 40_000, bodyTimeout: 40_000 });

function must(res: { status: number; body: any }, expected: number, what: string): any {
  if (res.status !== expected) throw new Error(`${what}: expected ${expected}, got ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  return res.body;
}

async function until(cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(1);
  }
}

/**
 * Samples pg_stat_activity every 50 ms for transactions that hold an xid (and so the journal's
 * horizon, server-wide) for 50 ms or more: what a horizon re-read or a late delivery waited on.
 * Its own statement is read-only (no xid), so it holds nothing back.
 */
class HorizonHolders {
  private readonly client: pg.Client;
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  private readonly seen = new Map<string, { count: number; maxMs: number }>();

  private readonly ownDb: string;

  constructor(url: string) {
    this.client = new pg.Client({ connectionString: url });
    this.ownDb = new URL(url).pathname.slice(1);
  }

  async start(): Promise<void> {
    await this.client.connect();
    this.timer = setInterval(() => void this.sample(), 50);
  }

  private async sample(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const { rows } = await this.client.query(
        `SELECT coalesce(datname, '-') AS db, backend_type, coalesce(left(regexp_replace(query, '\\s+', ' ', 'g'), 50), '') AS query,
                extract(epoch FROM clock_timestamp() - xact_start) * 1000 AS ms
           FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND clock_timestamp() - xact_start > interval '50 ms'`,
      );
      for (const r of rows as Array<{ db: string; backend_type: string; query: string; ms: number }>) {
        const key = `${r.db === this.ownDb ? 'this bench' : r.db} / ${r.backend_type} / ${r.query}`;
        const entry = this.seen.get(key) ?? { count: 0, maxMs: 0 };
        entry.count++;
        entry.maxMs = Math.max(entry.maxMs, Number(r.ms));
        this.seen.set(key, entry);
      }
    } catch {
      // A sample lost is a sample lost.
    } finally {
      this.busy = false;
    }
  }

  report(): string {
    if (this.seen.size === 0) return 'none';
    return [...this.seen].map(([key, { count, maxMs }]) => `[${key}: seen ${count}×, up to ${maxMs.toFixed(0)} ms]`).join(' ');
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    while (this.busy) await sleep(5);
    await this.client.end().catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = performance.now();
  const db = await createScratchDatabase(serverUrl, 'baton_bench');
  const adminToken = randomBytes(24).toString('hex');
  const servers: Server[] = [];
  const pools: Pool[] = [];
  const receiver = createServer();
  const watcher = new HorizonHolders(db.url);
  try {
    const a = await startServer('A', db.url, adminToken);
    servers.push(a);
    const b = await startServer('B', db.url, adminToken);
    servers.push(b);
    const httpA = newPool(a.baseUrl, 8);
    const httpB = newPool(b.baseUrl, 2);
    const watchHttpA = newPool(a.baseUrl, idleWatchers + 2);
    pools.push(httpA, httpB, watchHttpA);

    const admin = caller(httpA, '/admin/v1', adminToken);
    const noCaps = { operationsPerMonth: null, agentsAtOnce: null, requestsPerMinute: null, activeRuns: null, activeTasks: null };
    const org = must(await admin('POST', '/orgs', { name: 'bench', plan: 'ENTERPRISE', limits: noCaps }), 201, 'org');
    const space = must(await admin('POST', `/orgs/${org.id}/spaces`, { name: 'bench' }), 201, 'space');
    const { secret: key } = must(await admin('POST', `/orgs/${org.id}/keys`, { name: 'bench' }), 201, 'key');
    const onA = caller(httpA, `/v1/spaces/${space.id}`, key);
    const onB = caller(httpB, `/v1/spaces/${space.id}`, key);
    const watchOnA = caller(watchHttpA, `/v1/spaces/${space.id}`, key);
    // A second space for background load: its write transactions hold the journal's horizon
    // (server-wide) without waking anything parked on the first space.
    const space2 = must(await admin('POST', `/orgs/${org.id}/spaces`, { name: 'load' }), 201, 'space 2');
    const loadHttp = newPool(a.baseUrl, 2);
    pools.push(loadHttp);
    const loadOnA = caller(loadHttp, `/v1/spaces/${space2.id}`, key);
    /** Two clients creating budgets in the other space until stopped; returns the stop. */
    let budgetSeq = 0;
    const backgroundLoad = (): { stop(): Promise<number> } => {
      let running = true;
      let commits = 0;
      const clients = Array.from({ length: 2 }, async () => {
        while (running) {
          must(await loadOnA('POST', '/budgets', { name: `b${budgetSeq++}`, currency: 'USD', scale: 2, limitMinor: '100' }), 201, 'budget');
          commits++;
        }
      }).map((p) => p.catch((e: unknown) => ((running = false), e)));
      const t0 = performance.now();
      return {
        stop: async () => {
          running = false;
          const failed = (await Promise.all(clients)).find((e) => e !== undefined);
          if (failed) throw failed;
          return commits / ((performance.now() - t0) / 1000);
        },
      };
    };
    let poolSeq = 0;
    const createPool = (call: Call = onA) => call('POST', '/pools', { name: `p${poolSeq++}`, capacity: 1 });

    await watcher.start(); // after the migrations: what it sees happened during the measures
    console.log(`scratch database on ${new URL(serverUrl).host}; servers A ${a.baseUrl}, B ${b.baseUrl}`);
    console.log('\n| measure | n | p50 ms | p90 ms | p99 ms | max ms | mean ms | note |');
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |');

    // -------------------------------------------------------------------------------------------
    // (a) watch wake latency
    let lastHeardOnB = 0;
    const unsubscribe = b.notifier.subscribe(spaceTopic(space.id), () => (lastHeardOnB = performance.now()));
    let cursor = must(await onB('GET', '/watch?waitSeconds=0'), 200, 'cursor').nextCursor as string;
    for (const [label, watcher, watchCall, loaded] of [
      ['A', a, onA, false],
      ['B', b, onB, false],
      ['B', b, onB, true],
    ] as const) {
      const load = loaded ? backgroundLoad() : undefined;
      const latency: number[] = [];
      const hop: number[] = [];
      const extraReads: number[] = [];
      const samples = label === 'A' || loaded ? Math.floor(watchSamples / 2) : watchSamples;
      for (let i = -10; i < samples; i++) {
        const parkedBefore = watcher.notifier.parked;
        let replyAt = 0;
        const watch = watchCall('GET', `/watch?types=pool.created&waitSeconds=30&cursor=${cursor}`).then((r) => ((replyAt = performance.now()), r));
        await until(() => watcher.notifier.parked > parkedBefore, 'the watch to park');
        await sleep(15); // past its first read: parked on its topic alone
        const readsParked = watcher.reads;
        lastHeardOnB = 0;
        must(await createPool(), 201, 'pool');
        const ackAt = performance.now();
        const page = must(await watch, 200, 'watch');
        if (page.items.length !== 1) throw new Error(`watch answered ${page.items.length} items`);
        cursor = page.nextCursor;
        if (i < 0) continue; // warm-up
        latency.push(replyAt - ackAt);
        if (label === 'B') hop.push(lastHeardOnB - ackAt);
        extraReads.push(watcher.reads - readsParked);
      }
      const loadRate = await load?.stop();
      const rechecked = extraReads.filter((n) => n > 1).length;
      row(
        `(a) watch on ${label}, create on A${loaded ? `, other space loaded (${loadRate!.toFixed(0)} budget creates/s)` : ''}: ack → watch reply`,
        latency,
        `${rechecked} of ${latency.length} woken watches re-read after finding nothing (horizon); max ${Math.max(...extraReads)} reads`,
      );
      if (label === 'B') row('(a) … same, ack → B\'s PgNotifier hears the commit', hop, 'negative: B heard before A\'s reply reached the client');
    }
    unsubscribe();

    // -------------------------------------------------------------------------------------------
    // (b) webhook delivery lag
    let dispatching = a;
    const arrivals = new Map<string, { atPerf: number; atMs: number; occurredAtMs: number; emptyReads: number }>();
    receiver.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const atPerf = performance.now();
        const atMs = Date.now();
        const emptyReads = dispatching.emptyReads;
        res.statusCode = 204;
        res.end();
        const event = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        if (event.type === 'pool.created') arrivals.set(event.aggregate.id, { atPerf, atMs, occurredAtMs: Date.parse(event.occurredAt), emptyReads });
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    must(await onA('POST', '/destinations', { url: receiverUrl, eventTypes: ['pool.*'] }), 201, 'destination');

    for (const [dispatcher, loaded] of [
      [a, false],
      [b, false],
      [b, true],
    ] as const) {
      dispatching = dispatcher;
      dispatcher.baton.webhooks.start();
      const load = loaded ? backgroundLoad() : undefined;
      const fromAck: number[] = [];
      const fromOccurred: number[] = [];
      /** Samples whose delivery came after a dispatcher read that found nothing (the event held back by the horizon). */
      let heldBack = 0;
      const samples = loaded ? webhookLoadedSamples : webhookSamples;
      for (let i = -5; i < samples; i++) {
        const emptyBefore = dispatcher.emptyReads;
        const pool = must(await createPool(), 201, 'pool');
        const ackAt = performance.now();
        await until(() => arrivals.has(pool.id), `delivery of ${pool.id}`, 5_000);
        const arrival = arrivals.get(pool.id)!;
        if (i >= 0) {
          if (arrival.emptyReads > emptyBefore) heldBack++;
          fromAck.push(arrival.atPerf - ackAt);
          fromOccurred.push(arrival.atMs - arrival.occurredAtMs);
        }
        // The run's last read (it finds nothing: caught up) before the next sample, so that
        // an empty read counted there belongs to the next create.
        await until(() => dispatcher.emptyReads > arrival.emptyReads, 'the trailing read', 2_000).catch(() => undefined);
        await sleep(2);
      }
      const loadRate = await load?.stop();
      const slow = fromAck.filter((x) => x > 250).length;
      row(
        `(b) dispatcher on ${dispatcher.name}, one create at a time${loaded ? `, other space loaded (${loadRate!.toFixed(0)} budget creates/s)` : ''}: ack → receiver`,
        fromAck,
        `${slow} over 250 ms; ${heldBack} delivered after a dispatcher read that found nothing yet`,
      );
      row(`(b) … same, occurredAt → receiver`, fromOccurred, 'ms clock');
      if (loaded) {
        await dispatcher.baton.webhooks.stop();
        continue;
      }

      // A burst: `burstSize` creates by 8 clients at once.
      const burstAck = new Map<string, number>();
      let next = 0;
      const burstStart = performance.now();
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < burstSize) {
            next++;
            const pool = must(await createPool(), 201, 'pool');
            burstAck.set(pool.id, performance.now());
          }
        }),
      );
      const createdIn = performance.now() - burstStart;
      await until(() => [...burstAck.keys()].every((id) => arrivals.has(id)), 'the burst delivered', 30_000);
      const lastAt = Math.max(...[...burstAck.keys()].map((id) => arrivals.get(id)!.atPerf));
      row(
        `(b) dispatcher on ${dispatcher.name}, burst of ${burstSize} by 8 clients: ack → receiver`,
        [...burstAck].map(([id, ack]) => arrivals.get(id)!.atPerf - ack),
        `created in ${createdIn.toFixed(0)} ms, all delivered ${(lastAt - burstStart).toFixed(0)} ms after the first send`,
      );
      await dispatcher.baton.webhooks.stop();
    }

    // -------------------------------------------------------------------------------------------
    // (c) idle watchers and a busy space
    const loop = async (seconds: number): Promise<number> => {
      let commits = 0;
      const end = performance.now() + seconds * 1000;
      await Promise.all(
        Array.from({ length: loopClients }, async () => {
          while (performance.now() < end) {
            must(await createPool(), 201, 'pool');
            commits++;
          }
        }),
      );
      return commits / seconds;
    };
    const withWatchers = async (n: number): Promise<{ rate: number; wakeReads: number }> => {
      const abort = new AbortController();
      setMaxListeners(n + 10, abort.signal); // one listener per watch request
      // A fresh cursor, so the watches' first reads are short.
      cursor = must(await onA('GET', `/watch?types=group.decided&waitSeconds=0&cursor=${cursor}`), 200, 'cursor').nextCursor;
      const parkedBefore = a.notifier.parked;
      const watches = Array.from({ length: n }, () => watchOnA('GET', `/watch?types=group.decided&waitSeconds=30&cursor=${cursor}`, undefined, abort.signal).catch(() => undefined));
      await until(() => a.notifier.parked >= parkedBefore + n, `${n} watches to park`);
      await sleep(100);
      const readsBefore = a.reads;
      const rate = await loop(loopSeconds);
      const wakeReads = a.reads - readsBefore;
      abort.abort();
      await Promise.all(watches);
      await until(() => a.notifier.parked === parkedBefore, 'the watches to end');
      return { rate, wakeReads };
    };
    await loop(2); // warm-up
    const rates: Record<number, number[]> = { 0: [], [idleWatchers]: [] };
    const extra: number[] = [];
    for (let round = 0; round < loopRounds; round++) {
      for (const n of [0, idleWatchers]) {
        const { rate, wakeReads } = await withWatchers(n);
        rates[n]!.push(rate);
        if (n > 0) extra.push(wakeReads);
        console.log(`(c) round ${round + 1}, ${n} parked watches: ${rate.toFixed(0)} pool creates/s (${loopClients} clients, ${loopSeconds} s), ${wakeReads} reads through A's store`);
      }
    }
    const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length;
    const ratio = mean(rates[idleWatchers]!) / mean(rates[0]!);
    const pairRatios = rates[idleWatchers]!.map((r, i) => r / rates[0]![i]!);
    const median = [...pairRatios].sort((x, y) => x - y)[Math.floor(pairRatios.length / 2)]!;
    const summary =
      `(c) ${loopClients} clients creating pools on A, ${loopRounds} × ${loopSeconds} s each way: mean ${mean(rates[0]!).toFixed(0)} creates/s with 0 parked watches, ` +
      `${mean(rates[idleWatchers]!).toFixed(0)} with ${idleWatchers}: ratio of means ${ratio.toFixed(2)}, per round ${pairRatios.map((r) => r.toFixed(2)).join(', ')} (median ${median.toFixed(2)})`;
    console.log(summary);

    console.log('\nsummary');
    console.log('| measure | n | p50 ms | p90 ms | p99 ms | max ms | mean ms | note |');
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
    for (const line of rows) console.log(line);
    console.log(summary);
    console.log(`transactions holding an xid for 50 ms or more, seen by a 50 ms pg_stat_activity sampler: ${watcher.report()}`);
    console.log(`\ntotal ${((performance.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    await watcher.stop();
    receiver.close();
    receiver.closeAllConnections();
    for (const p of pools) await p.close().catch(() => undefined);
    for (const s of servers) await stopServer(s).catch((e: unknown) => console.error(`closing ${s.name}:`, e));
    await db.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
