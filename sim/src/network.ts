import type { Faults } from './faults';
import type { SimRandom } from './rng';
import { nothingHappened, type Scheduler } from './scheduler';
import type { ServerHost } from './server-host';
import type { HttpReply, HttpRequest } from './http';
import type { Trace } from './trace';

export class NetworkError extends Error {
  override name = 'NetworkError';
  constructor(readonly reason: 'timeout' | 'refused') {
    super(`network: ${reason}`);
  }
}

/** How long a client waits for a reply before it gives up on that attempt. */
export const requestTimeoutMs = 2_000;

/**
 * The simulated network between agents and the server. Every message may be delayed, lost or
 * duplicated as the run's faults say; a lost reply means the server committed and the client
 * never heard, which only idempotency makes safe to retry.
 */
export class Network {
  private sequence = 0;
  requests = 0;

  constructor(
    readonly scheduler: Scheduler,
    private readonly rng: SimRandom,
    private readonly faults: () => Faults,
    private readonly server: ServerHost,
    private readonly trace: Trace,
  ) {}

  send(from: string, request: HttpRequest): Promise<HttpReply> {
    const id = ++this.sequence;
    const tag = `${from} #${id} ${request.method} ${request.path.replace(/^\/v1\/spaces\/[^/]+/, '')}`;
    return new Promise<HttpReply>((resolve, reject) => {
      let done = false;
      const finish = (outcome: () => void): void => {
        if (done) return;
        done = true;
        outcome();
      };
      this.scheduler.after(requestTimeoutMs, 'timeout', () => (done ? nothingHappened : finish(() => reject(new NetworkError('timeout')))));
      if (this.rng.chance(this.faults().dropRequest)) {
        this.trace.add(this.scheduler.now(), `${tag} request lost`);
        return;
      }
      const deliver = async (copy: boolean): Promise<void> => {
        this.requests++;
        const reply = await this.server.handle(request);
        if (!reply) {
          this.trace.add(this.scheduler.now(), `${tag} refused`);
          if (!copy) this.scheduler.after(this.latency(), 'refused', () => finish(() => reject(new NetworkError('refused'))));
          return;
        }
        this.trace.add(this.scheduler.now(), `${tag}${copy ? ' (duplicate)' : ''} -> ${reply.statusCode} ${summary(reply)}`);
        if (copy) return; // the duplicate's reply reaches no one
        if (this.rng.chance(this.faults().dropReply)) {
          this.trace.add(this.scheduler.now(), `${tag} reply lost`);
          return;
        }
        this.scheduler.after(this.latency(), 'reply', () => finish(() => resolve(reply)));
      };
      // A long poll parks on the server until the clock moves or another request commits, and
      // both happen only in later steps: its step must not wait for it. Everything else is
      // handled to completion within its step.
      // (A recv names its wait in the body; GET /watch names it in seconds.)
      const longPoll = /[?&](waitMs|waitSeconds)=[1-9]/.test(request.path) || Number((request.body as { waitMs?: unknown } | undefined)?.waitMs) > 0;
      const start = (copy: boolean) => (longPoll ? void deliver(copy) : deliver(copy));
      this.scheduler.after(this.latency(), 'deliver', () => start(false));
      if (this.rng.chance(this.faults().duplicate)) this.scheduler.after(this.latency() * 2, 'duplicate', () => start(true));
    });
  }

  private latency(): number {
    const base = this.rng.int(1, 20);
    return this.rng.chance(this.faults().delay) ? base + this.rng.int(100, 3_000) : base;
  }
}

/** What a trace line shows of a reply: enough to tell two runs apart, short enough to read. */
function summary(reply: HttpReply): string {
  const body = reply.body;
  if (body?.error) return body.error.code;
  const replayed = reply.headers['idempotent-replayed'] ? ' replayed' : '';
  if (body?.entry) return `${body.entry.kind} ${body.entry.amountMinor} ${body.reservation.state}${body.replay ? ' replay' : ''}${replayed} ${body.budget.availableMinor}/${body.budget.reservedMinor}/${body.budget.settledMinor}`;
  if (body?.items) return `${body.items.length} items next ${body.nextCursor}`;
  if (body?.id) return `${body.id.slice(0, 8)}${replayed}`;
  return '';
}
