/**
 * The `runtime` phase of `npm run bench -- tasks` (server/bench/tasks.ts): a drain run by
 * @baton-coordination/runtime workers as a user's fleet runs it. Loaded by path in a worker thread of the
 * benchmark, so the server's benchmark does not link the runtime, and the runtime's client work
 * never queues on the server's event loop. Plain data in (workerData), plain data out.
 */
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { createClient, createWorker } from '../src/index';

export interface RuntimeDrainJob {
  runtimeDrainJob: true;
  endpoint: { baseUrl: string; spaceId: string; key: string };
  mailboxId: string;
  scopeId: string;
  tasks: number;
  workers: number;
  concurrency: number;
  /** The worker's batching knobs (createWorker's `batching`); the defaults when absent. */
  batching?: { maxItems?: number; delayMs?: number; maxInFlight?: number };
}

/** As the benchmark's other jobs answer (server/bench/tasks.ts RateResult). */
export interface RuntimeDrainResult {
  seconds: number;
  done: number;
  emptyAdmits: 0;
  samples: Record<string, number[]>;
  problems: { count: number; byStatus: Record<string, number>; first: string[] };
}

/** `job.workers` runtime workers of `job.concurrency` no-op handlers each, until every task is completed. */
export async function runtimeDrain(job: RuntimeDrainJob): Promise<RuntimeDrainResult> {
  const problems: RuntimeDrainResult['problems'] = { count: 0, byStatus: {}, first: [] };
  const client = createClient({ baseUrl: job.endpoint.baseUrl, apiKey: job.endpoint.key, spaceId: job.endpoint.spaceId });
  let done = 0;
  let allDone!: () => void;
  const finished = new Promise<void>((resolve) => (allDone = resolve));
  const workers = Array.from({ length: job.workers }, (_, i) =>
    createWorker({
      client,
      mailboxId: job.mailboxId,
      scopeId: job.scopeId,
      holder: `bench-runtime-${i}`,
      concurrency: job.concurrency,
      leaseSeconds: 60,
      waitMs: 1_000,
      handler: () => undefined,
      ...(job.batching ? { batching: job.batching } : {}),
      onEvent: (event) => {
        if (event.type === 'completed' && ++done === job.tasks) allDone();
        if (event.type === 'error' || event.type === 'lease_lost') {
          problems.count++;
          problems.byStatus[event.type] = (problems.byStatus[event.type] ?? 0) + 1;
          if (problems.first.length < 8) problems.first.push(`runtime ${event.type}: ${JSON.stringify(event).slice(0, 300)}`);
        }
      },
    }),
  );
  const t0 = performance.now();
  for (const worker of workers) worker.start();
  const limit = new Promise<void>((resolve) => setTimeout(resolve, 600_000).unref());
  await Promise.race([finished, limit]);
  const seconds = (performance.now() - t0) / 1000;
  await Promise.all(workers.map((worker) => worker.stop({ deadlineMs: 5_000 })));
  return { seconds, done, emptyAdmits: 0, samples: {}, problems };
}

if ((workerData as RuntimeDrainJob | undefined)?.runtimeDrainJob) {
  runtimeDrain(workerData as RuntimeDrainJob).then(
    (result) => parentPort!.postMessage(result),
    (error: unknown) => {
      throw error; // surfaces as the Worker's 'error' event in the main thread
    },
  );
}
