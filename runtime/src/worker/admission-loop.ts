import type { RuntimeClock, RuntimeRandom } from '../clock';
import type { Admitted, CallOptions } from '../contract';
import { sleepQuietly } from '../sleep-quietly';
import { isApiError, WorkerStoppedError } from './errors';
import type { HandlerSlots } from './handler-slots';

/**
 * Admits task deliveries while the worker runs: waits for a free handler slot, long-polls
 * admit, hands what it claimed over, and backs off after failures. One loop per worker, so
 * admits never overlap and each intended claim has one Idempotency-Key.
 */

/**
 * Admit answers that retrying cannot fix (a malformed request, a key refused or lacking a
 * permission, an unknown mailbox or space): the worker stops on them rather than retry forever.
 */
const fatalAdmitHints: ReadonlyMap<number, string> = new Map([
  [400, 'the admit request is invalid: check scopeId (a UUID, e.g. BATON_SCOPE) and mailboxId'],
  [401, 'the API key was not accepted: check BATON_KEY'],
  [403, 'the API key may not admit here: it needs coordination_write in this space (check BATON_KEY and BATON_SPACE)'],
  [404, 'the mailbox or the space does not exist: check mailboxId and BATON_SPACE'],
]);

/** An empty admit answered this fast (a draining server, waitMs 0) would otherwise spin the loop. */
export const emptyAdmitPauseMs = 1_000;

export interface AdmissionLoopOptions {
  /** One admit request for up to `freeSlots` deliveries. */
  admit: (freeSlots: number, options: CallOptions) => Promise<Admitted[]>;
  slots: HandlerSlots;
  /** Names this worker's claim keys, so the keys of two workers never meet. */
  holderSession: string;
  /** After a failed admit: ceiling of the first wait, doubling up to maxMs. */
  backoff: { baseMs: number; maxMs: number };
  clock: RuntimeClock;
  random: RuntimeRandom;
  /**
   * What one admit claimed, and the moment its reply arrived. The lease is counted from the
   * reply, not from the send as a renew's is: the long poll may park for waitMs before it
   * claims, and counted from the send a task claimed late in the poll would arrive with its
   * lease spent. The reply is late by its travel time only, and leaseExpiresAt still bounds it.
   */
  onAdmitted: (admitted: Admitted[], receivedAtMs: number) => void;
  onAdmitFailed: (error: unknown, retryInMs: number) => void;
  /** Admit answered what no retry fixes; the loop has ended. */
  onFatal: (stopped: WorkerStoppedError) => void;
}

export class AdmissionLoop {
  private claimSeq = 0;

  constructor(private readonly options: AdmissionLoopOptions) {}

  /** Admits until `stopped` aborts (the long poll with it) or admit answers a fatal error. */
  async run(stopped: AbortSignal): Promise<void> {
    const { admit, slots, clock } = this.options;
    let failures = 0;
    let claimKey = this.nextClaimKey();
    while (!stopped.aborted) {
      await slots.untilFree(stopped);
      if (stopped.aborted) break;
      const sentAtMs = clock.now();
      let admitted: Admitted[];
      try {
        admitted = await admit(slots.free, { signal: stopped, idempotencyKey: claimKey });
      } catch (error) {
        if (stopped.aborted) break;
        const fatal = fatalAdmitError(error);
        if (fatal !== null) return this.options.onFatal(fatal);
        failures += 1;
        if (!mayHaveClaimed(error)) claimKey = this.nextClaimKey();
        const retryInMs = this.backoffMs(failures);
        this.options.onAdmitFailed(error, retryInMs);
        await sleepQuietly(clock, retryInMs, stopped);
        continue;
      }
      failures = 0;
      if (admitted.length === 0) {
        await sleepQuietly(clock, emptyAdmitPauseMs - (clock.now() - sentAtMs), stopped);
        continue;
      }
      claimKey = this.nextClaimKey();
      this.options.onAdmitted(admitted, clock.now());
    }
  }

  /** One Idempotency-Key per intended claim: a retry after a lost reply gets the same deliveries back. */
  private nextClaimKey(): string {
    return `${this.options.holderSession}:claim-${++this.claimSeq}`;
  }

  private backoffMs(failures: number): number {
    const { baseMs, maxMs } = this.options.backoff;
    const ceilingMs = Math.min(maxMs, baseMs * 2 ** Math.max(0, failures - 1));
    // Half fixed, half jitter: never hammers at once, and workers that failed together spread out.
    return Math.floor(ceilingMs / 2 + (this.options.random.next() * ceilingMs) / 2);
  }
}

function fatalAdmitError(error: unknown): WorkerStoppedError | null {
  if (!isApiError(error)) return null;
  const hint = fatalAdmitHints.get(error.status);
  return hint === undefined ? null : new WorkerStoppedError(error.code, error.status, hint, error);
}

/** Errors after which a retried admit should keep its Idempotency-Key: the first try may have claimed. */
function mayHaveClaimed(error: unknown): boolean {
  if (!isApiError(error)) return true;
  return error.status === 0 || error.status >= 500 || error.code === 'IDEMPOTENCY_KEY_IN_FLIGHT';
}
