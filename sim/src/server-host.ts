import type { Store } from '@baton/core';
import { createBaton, type Baton, type BatonOptions } from '@baton-coordination/server';
import { pino, type Logger } from 'pino';
import type { Plant } from './bugs/catalogue';
import type { HttpReply, HttpRequest } from './http';
import type { SimRandom } from './rng';
import type { Scheduler } from './scheduler';

export const adminToken = 'sim-admin-token';

/**
 * The real server (routes, auth, validation, idempotency, core, store) on the simulated clock.
 * A restart throws the Fastify app and everything in it away and builds a new one on the same
 * store: what survives is exactly what was committed.
 */
export class ServerHost {
  private baton: Baton | undefined;
  private generation = 0;
  /** When each server process started taking requests: a new one knows nothing of what the last one counted in memory. */
  readonly startsMs: number[] = [];
  /** Until this time the server refuses connections (drained, restarting). */
  private downUntilMs = 0;

  constructor(
    private readonly store: Store,
    private readonly scheduler: Scheduler,
    private readonly rng: SimRandom,
    /** Webhook delivery settings (webhook-receiver.ts): the simulated receiver behind the faulty network. */
    private readonly webhooks: BatonOptions['webhooks'] = undefined,
    /** A known bug at the network or limits seam (bugs/catalogue.ts); none by default. */
    private readonly plant: Plant = {},
    /**
     * Told the cause of every request the server answered 500 (the error handler's `unexpected
     * error` log line): an agent sees only the envelope, which names no cause by design.
     */
    private readonly onUnexpectedError: (cause: string) => void = () => {},
  ) {}

  async start(): Promise<void> {
    this.generation++;
    this.startsMs.push(Math.max(this.scheduler.now(), this.downUntilMs));
    this.baton = await createBaton({
      store: this.store,
      clock: this.scheduler.clock,
      // Loops and cache expiry on virtual time too: a run stays a function of its seed.
      realTime: this.scheduler.clock,
      random: this.rng.fork(`server-${this.generation}`),
      adminToken,
      logger: this.unexpectedErrorLogger(),
      ...(this.webhooks ? { webhooks: this.webhooks } : {}),
      ...(this.plant.limits ? { limits: this.plant.limits() } : {}),
    });
  }

  isUp(): boolean {
    return this.baton !== undefined && this.scheduler.now() >= this.downUntilMs;
  }

  /** Loses all in-memory state at once, as a crash does. */
  async restart(): Promise<void> {
    const old = this.baton;
    this.baton = undefined;
    await old?.drainAndClose();
    await this.start();
  }

  /** SIGTERM: stop taking requests for `downMs`, then come back as a new process. */
  async drainAndRestart(downMs: number): Promise<void> {
    this.downUntilMs = this.scheduler.now() + downMs;
    await this.restart();
  }

  /** Handles one request to completion; undefined when the connection is refused. */
  async handle(sent: HttpRequest): Promise<HttpReply | undefined> {
    if (!this.isUp()) return undefined;
    const request = this.plant.request ? this.plant.request(sent) : sent;
    const reply = await this.inject(request);
    return this.plant.reply ? this.plant.reply(request, reply) : reply;
  }

  private async inject(request: HttpRequest): Promise<HttpReply> {
    const res = await this.baton!.app.inject({
      method: request.method,
      url: request.path,
      headers: request.headers,
      ...(request.body === undefined ? {} : { payload: request.body as object }),
    });
    return { statusCode: res.statusCode, headers: res.headers, body: res.body ? JSON.parse(res.body) : undefined };
  }

  /** Error level only, so a run logs nothing else; its lines are read, not printed. */
  private unexpectedErrorLogger(): Logger {
    return pino(
      { level: 'error', base: null, timestamp: false },
      {
        write: (line: string) => {
          const entry = JSON.parse(line) as { msg?: string; reqId?: string; err?: { type?: string; message?: string; code?: string; stack?: string } };
          if (entry.msg !== 'unexpected error') return;
          const err = entry.err ?? {};
          const at = err.stack?.split('\n').find((frame) => frame.trim().startsWith('at '))?.trim() ?? 'no stack';
          this.onUnexpectedError(`server: request ${entry.reqId ?? '?'} failed unexpectedly: ${err.type ?? 'Error'}${err.code ? ` ${err.code}` : ''}: ${err.message ?? '?'} (${at})`);
        },
      },
    );
  }

  /** The background sweep's work, run as a scheduled step so it stays deterministic. */
  async runDueWork(): Promise<void> {
    if (this.isUp()) await this.baton!.deps.runDueWork();
  }
}
