import type { RuntimeClock } from '../clock';
import { sleepQuietly } from '../sleep-quietly';

/** What a drain needs of a delivery in flight. */
export interface DrainableRun {
  /** Resolves when nothing more will be sent for the delivery. */
  readonly settled: Promise<void>;
  /** Hands the delivery back (nack with retry) unless it already finished. */
  abandon(): Promise<void>;
}

/**
 * Ends a worker's deliveries gracefully: once admission has stopped, the handlers in flight get
 * until `deadlineMs` to finish; what is still running then is abandoned, which nacks it with
 * retry so another worker takes it at once instead of after its lease runs out. Resolves when
 * nothing more will be sent for any delivery.
 *
 * `runs` is read live: a delivery that settles leaves it, and one admitted by an admit answered
 * after the stop began is in it (already abandoned) by the time admission has ended.
 */
export async function drain(runs: ReadonlySet<DrainableRun>, admissionEnded: Promise<void>, clock: RuntimeClock, deadlineMs: number): Promise<void> {
  await admissionEnded;
  const deadlineOver = new AbortController();
  const deadline = sleepQuietly(clock, deadlineMs, deadlineOver.signal);
  await Promise.race([Promise.all([...runs].map((run) => run.settled)), deadline]);
  deadlineOver.abort();
  await Promise.all([...runs].map((run) => run.abandon()));
  // Completes and nacks already on their way are waited for: the client's timeouts bound them.
  await Promise.all([...runs].map((run) => run.settled));
}

/** Drains on each of `signals` (SIGTERM and SIGINT by default); returns a function that removes the hooks. */
export function drainOnSignals(stop: () => unknown, signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT']): () => void {
  const onSignal = (): void => void stop();
  for (const signal of signals) process.on(signal, onSignal);
  return () => {
    for (const signal of signals) process.off(signal, onSignal);
  };
}
