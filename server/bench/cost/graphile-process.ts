/**
 * graphile-worker in a process of its own (so /proc tells its CPU apart), on DATABASE_URL, with
 * the preset of GRAPHILE_BATCHED: unset, its defaults (concurrency 10); `1`, localQueue 100 and
 * completeJobBatchDelay 0. The parent inserts the jobs and watches the table empty; this process
 * only migrates, then runs the worker from `start` to `stop` (a warm-up, then the measured drain).
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { serveCommands } from './ipc';

interface GraphileModule {
  run(options: Record<string, unknown>): Promise<{ stop(): Promise<void> }>;
  makeWorkerUtils(options: Record<string, unknown>): Promise<{ migrate(): Promise<void>; release(): Promise<void> }>;
  Logger: new (factory: () => () => void) => unknown;
}

const peersDir = fileURLToPath(new URL('../peers/', import.meta.url));
const gw = createRequire(join(peersDir, 'package.json'))('graphile-worker') as GraphileModule;
const batched = process.env.GRAPHILE_BATCHED === '1';
const logger = new gw.Logger(() => () => {});
// A pool of ours, as in the earlier in-process peers run: max 20 covers concurrency 10 plus its listener and completions.
const pgPool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20 });
const report = (error: Error): void => console.log(`  graphile-worker pool: ${error.message}`);
pgPool.on('error', report);
pgPool.on('connect', (client) => client.on('error', report));
let runner: { stop(): Promise<void> } | undefined;

serveCommands({
  migrate: async () => {
    const utils = await gw.makeWorkerUtils({ pgPool, logger });
    await utils.migrate();
    await utils.release();
  },
  start: async () => {
    const preset = batched ? { worker: { localQueue: { size: 100 }, completeJobBatchDelay: 0 } } : {};
    runner = await gw.run({ pgPool, logger, noHandleSignals: true, preset, taskList: { noop: async () => {} } });
  },
  stop: async () => {
    await runner?.stop();
    runner = undefined;
  },
  close: () => pgPool.end(),
});
