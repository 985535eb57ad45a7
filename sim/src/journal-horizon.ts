import type { Store } from '@baton/core';
import { eventsBehindHorizon, oldestForeignWriterMs } from '@baton-coordination/server';

/** How long the final reads wait for another connection's transaction to end before the run fails. */
const horizonWaitMs = 60_000;
const pollMs = 20;

/**
 * Waits until every event this run committed is readable. On PostgreSQL a journal read returns
 * only what committed before the oldest transaction still open anywhere on the server
 * (docs/event-journal.md, "The caveat"), so another database's writer, a second sim run among
 * them, can hold back events this run committed long after its own writers are done. The watchers'
 * last pages, the webhook catch-up and the checks must all read the same whole journal, or a check
 * finds owed events that a catch-up ended before seeing. Real time, not simulated: the horizon
 * moves when PostgreSQL's transactions end. Returns the problem when it does not move in time.
 */
export async function untilJournalReadable(store: Store, spaceId: string, waitMs = horizonWaitMs): Promise<string[]> {
  const deadline = performance.now() + waitMs;
  for (;;) {
    const behind = await eventsBehindHorizon(store, spaceId);
    if (behind === 0) return [];
    if (performance.now() >= deadline) {
      return [`environment: ${behind} committed events still behind the journal horizon after ${waitMs} ms: a transaction elsewhere on the PostgreSQL server stays open`];
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** A foreign transaction open this long can have held events back across many simulated seconds. */
const foreignHoldNoteMs = 100;
const watchEveryMs = 50;

/**
 * Watches, in real time, how long transactions of other databases on the PostgreSQL server stay
 * open while a run goes on. The simulated clock does not wait for PostgreSQL's horizon: while one
 * is held back, the run's watchers, runtime workers and webhooks see no new events, and simulated
 * seconds pass as if nothing happened, so liveness and journal checks can fail for a reason
 * outside Baton. A failing run says how long the longest such transaction was, so that it is not
 * mistaken for a bug, nor a bug for it: `note` is for a run that already failed.
 */
export class ForeignWriterWatch {
  private longestMs = 0;
  private readonly timer: NodeJS.Timeout | undefined;
  private sampling = false;

  constructor(private readonly store: Store, enabled: boolean) {
    if (enabled) this.timer = setInterval(() => void this.sample(), watchEveryMs);
  }

  private async sample(): Promise<void> {
    if (this.sampling) return;
    this.sampling = true;
    try {
      this.longestMs = Math.max(this.longestMs, await oldestForeignWriterMs(this.store));
    } catch {
      // The store may be closing as the run ends: a sample lost is no finding.
    } finally {
      this.sampling = false;
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** The line a failed run adds when another database held the horizon back long enough to matter. */
  note(): string[] {
    if (this.longestMs < foreignHoldNoteMs) return [];
    return [
      `environment: a transaction of another database on this PostgreSQL server stayed open up to ${Math.round(this.longestMs)} ms during the run, holding the journal back while simulated time ran on; replay on a server nothing else writes to (docs/simulator.md, "Differential mode")`,
    ];
  }
}
