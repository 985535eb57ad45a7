import { verifyWebhook, WebhookVerificationError } from '@baton-coordination/runtime';
import type { AttemptOptions, AttemptResult, DispatcherOptions } from '@baton-coordination/server';
import { noFaults, type Faults } from './faults';
import type { SimRandom } from './rng';
import type { Trace } from './trace';

/** The simulated receiver's signing key (BATON_SECRET_KEY of the simulated server). */
const secretKey = Buffer.alloc(32, 7);

/**
 * A webhook receiver behind the simulation's faulty network. The server's dispatcher sends it
 * each attempt (DispatcherOptions.deliver) instead of HTTP: a request may be lost (the
 * dispatcher sees a timeout and the receiver nothing), the receiver may answer 503, or its 200
 * may be lost (received, and sent again later: at-least-once). An attempt completes within the
 * step that made it, as the sim's store calls do; time passes between the dispatcher's runs.
 * Every delivery's signature is verified as a receiver would, with the runtime's verifyWebhook.
 */
export class WebhookReceiver {
  /** The destination's signing secret, known once the setup created it. */
  secret: string | undefined;
  /** Event ids in the order they arrived, with repeats. */
  readonly received: string[] = [];
  readonly problems: string[] = [];
  private faults: () => Faults = () => noFaults;

  constructor(
    private readonly rng: SimRandom,
    private readonly clock: { now(): number },
    private readonly trace: Trace,
  ) {}

  /** Faults follow the run's phase once the simulation has them. */
  connect(faults: () => Faults): void {
    this.faults = faults;
  }

  /** The simulated server's webhook settings: this receiver, and retries compressed to fit a run. */
  dispatcherOptions(): Partial<DispatcherOptions> {
    return {
      secretKey,
      allowPrivate: true,
      deliver: this.deliver,
      // Seconds, not hours: the liveness phase must see a failing destination come back.
      schedule: { baseDelayMs: 200, maxDelayMs: 5_000, pauseAfterMs: 24 * 3_600_000 },
    };
  }

  readonly deliver = async (_url: string, headers: Record<string, string>, body: string, options: AttemptOptions): Promise<AttemptResult> => {
    const faults = this.faults();
    const failed = (error: string, httpStatus: number | null = null): AttemptResult => ({ ok: false, httpStatus, error, responseBody: null, durationMs: options.timeoutMs });
    if (this.rng.chance(faults.dropRequest)) return failed('timeout: request lost');
    if (this.rng.chance(faults.drain)) return failed('receiver unavailable', 503);
    this.receive(headers, body);
    if (this.rng.chance(faults.dropReply)) return failed('timeout: reply lost');
    return { ok: true, httpStatus: 200, error: null, responseBody: 'ok', durationMs: 1 };
  };

  private receive(headers: Record<string, string>, body: string): void {
    try {
      if (!this.secret) throw new Error('a delivery before the destination existed');
      const payload = verifyWebhook<{ eventId: string }>(this.secret, headers, body, { nowMs: this.clock.now() });
      this.received.push(payload.eventId);
      this.trace.add(this.clock.now(), `webhook receiver got ${payload.eventId}`);
    } catch (error) {
      const why = error instanceof WebhookVerificationError ? `${error.reason}: ${error.message}` : String(error);
      this.problems.push(`webhook delivery ${headers['webhook-id'] ?? '?'} failed verification (${why})`);
    }
  }
}
