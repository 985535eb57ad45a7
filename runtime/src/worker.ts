import { randomUUID } from 'node:crypto';
import { systemClock, systemRandom } from './clock';
import type { Admitted } from './contract';
import { consoleLogger } from './logger';
import { AdmissionLoop } from './worker/admission-loop';
import { deliveryRequests } from './worker/delivery-requests';
import { DeliveryRun } from './worker/delivery-run';
import { drain, drainOnSignals } from './worker/drain';
import type { WorkerStoppedError } from './worker/errors';
import type { FlusherOptions } from './worker/flusher';
import { HandlerSlots } from './worker/handler-slots';
import { WorkerReporter } from './worker/reporter';
import type { Worker, WorkerOptions } from './worker/types';

export { DeliveryAbortedError, isPermanent, nonRetryable, PermanentError, WorkerStoppedError } from './worker/errors';
export type { DeliveryHandler, HandlerContext, Worker, WorkerDelivery, WorkerEvent, WorkerOptions, WorkerStats } from './worker/types';

/**
 * The worker loop: admit task deliveries with long polls, run a handler for each under a
 * renewed lease, then complete or nack with the delivery's token. Built on WorkerApi alone, so
 * it runs against the real client, the simulator or an in-memory fake.
 *
 * createWorker puts the parts in worker/ together:
 * - the admission loop (admission-loop.ts) admits into free handler slots (handler-slots.ts);
 * - each admitted delivery is a run (delivery-run.ts): its handler works while a lease keeper
 *   (lease-keeper.ts) renews the lease, then the run completes or nacks;
 * - the requests (delivery-requests.ts) go out batched by flushers (flusher.ts) or one by one;
 * - stop() drains (drain.ts): no more admits, handlers finish until a deadline, the rest nacked;
 * - the reporter (reporter.ts) turns what happens into events, log lines and counters.
 * Time and chance come from the injected clock and random source, so tests and the simulator
 * drive every wait, renewal and backoff.
 */

/**
 * Batching defaults, chosen by measurement (an earlier pass of docs/benchmarks.md, "Batches", in git history): up to 100 items per
 * request (the server's limit), a flush as soon as the event loop turns (0 ms), and two requests
 * of a kind in flight, while which the next batch gathers.
 */
export const defaultBatching: FlusherOptions = { maxItems: 100, delayMs: 0, maxInFlight: 2 };

export const defaultAdmitWaitMs = 20_000;
export const defaultDrainDeadlineMs = 30_000;
const defaultAdmitBackoff = { baseMs: 500, maxMs: 30_000 };

export function createWorker<I = unknown, O = unknown>(options: WorkerOptions<I, O>): Worker {
  const { client, mailboxId, scopeId, holder, leaseSeconds, handler } = options;
  const slots = new HandlerSlots(options.concurrency);
  const clock = options.clock ?? systemClock;
  const random = options.random ?? systemRandom;
  const waitMs = options.waitMs ?? defaultAdmitWaitMs;
  // An identity, not chance: it must differ between any two workers anywhere, which a seeded or
  // fake random source (the simulator's, a test's) cannot promise. The simulator's seam
  // rewrites it to stay deterministic.
  const holderSession = randomUUID();
  const requests = deliveryRequests(client, clock, options.batching === false ? null : { ...defaultBatching, ...options.batching });
  const reporter = new WorkerReporter<I>({ onEvent: options.onEvent, logger: options.logger ?? consoleLogger, holder, mailboxId, scopeId, inFlight: () => slots.inUse });
  const runs = new Set<DeliveryRun<I, O>>();

  /** Aborts the admit long poll and the admission loop's waits. */
  const stopAdmitting = new AbortController();
  let started = false;
  let admissionEnded: Promise<void> = Promise.resolve();
  /** Set when admit answered what no retry fixes: the stop it began rejects with it. */
  let stoppedByItself: WorkerStoppedError | null = null;
  let stopping: Promise<void> | null = null;
  let removeSignalHooks: (() => void) | null = null;
  let resolveDone!: () => void;
  let rejectDone!: (error: Error) => void;
  const done = new Promise<void>((resolve, reject) => ((resolveDone = resolve), (rejectDone = reject)));

  const admission = new AdmissionLoop({
    admit: (freeSlots, callOptions) => requests.admit({ scopeId, mailboxId, holder, holderSession, leaseSeconds, waitMs }, freeSlots, callOptions),
    slots,
    holderSession,
    backoff: options.admitBackoff ?? defaultAdmitBackoff,
    clock,
    random,
    onAdmitted: (admitted, receivedAtMs) => {
      for (const one of admitted) accept(one, receivedAtMs);
    },
    onAdmitFailed: (error, retryInMs) => reporter.emit({ type: 'error', stage: 'admit', error, retryInMs }),
    onFatal: (stopped) => {
      stoppedByItself = stopped;
      reporter.stoppedByItself(stopped);
      // The rejection is the caller's through `done` and stop(); this call's copy is not.
      stop().catch(() => {});
    },
  });

  function accept(admitted: Admitted, receivedAtMs: number): void {
    const run = new DeliveryRun<I, O>(admitted, receivedAtMs, { handler, requests, clock, leaseSeconds, emit: reporter.emit, onHandlerReturned: () => slots.release() });
    runs.add(run);
    void run.settled.then(() => runs.delete(run));
    reporter.emit({ type: 'admitted', delivery: run.delivery });
    // An admit answered after stop() began: hand the delivery straight back.
    if (stopAdmitting.signal.aborted) return void run.abandon();
    slots.take();
    run.start();
  }

  function start(): void {
    if (started || stopping) return;
    started = true;
    reporter.started({ holderSession, concurrency: slots.size, leaseSeconds });
    admissionEnded = admission.run(stopAdmitting.signal);
    if (options.handleSignals) removeSignalHooks = installSignalHandlers(options.handleSignals === true ? {} : options.handleSignals);
  }

  function stop(stopOptions: { deadlineMs?: number } = {}): Promise<void> {
    if (stopping) return stopping;
    stopAdmitting.abort();
    const deadlineMs = stopOptions.deadlineMs ?? defaultDrainDeadlineMs;
    if (started) reporter.draining(deadlineMs);
    stopping = drain(runs, admissionEnded, clock, deadlineMs).then(() => {
      removeSignalHooks?.();
      reporter.emit({ type: 'stopped' });
      if (stoppedByItself === null) return resolveDone();
      rejectDone(stoppedByItself);
      throw stoppedByItself;
    });
    return stopping;
  }

  function installSignalHandlers(hookOptions: { deadlineMs?: number; signals?: NodeJS.Signals[] } = {}): () => void {
    return drainOnSignals(() => stop({ deadlineMs: hookOptions.deadlineMs ?? defaultDrainDeadlineMs }), hookOptions.signals);
  }

  return {
    holderSession,
    start,
    stop,
    get stats() {
      return reporter.stats;
    },
    done,
    installSignalHandlers,
  };
}
