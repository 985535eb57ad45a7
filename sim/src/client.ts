import { NetworkError, type Network } from './network';
import type { Scheduler } from './scheduler';
import type { HttpReply } from './http';

export interface CallOptions {
  body?: unknown;
  idempotencyKey?: string;
  /** Checked before each attempt: once false (the agent crashed), the call never returns. */
  alive?: () => boolean;
}

/**
 * An agent's HTTP client, as a careful worker would write one: on a timeout, a refused
 * connection or IDEMPOTENCY_KEY_IN_FLIGHT it retries the very same request (same
 * Idempotency-Key) with backoff, so every reply it returns is the server's answer to one
 * logical request.
 */
export class ApiClient {
  constructor(
    private readonly name: string,
    private readonly network: Network,
    private readonly scheduler: Scheduler,
    private readonly auth: () => { spaceId: string; key: string },
    private readonly onServerError: (reply: HttpReply, what: string) => void,
  ) {}

  async call(method: 'GET' | 'POST', path: string, options: CallOptions = {}): Promise<HttpReply> {
    const { spaceId, key } = this.auth();
    const headers: Record<string, string> = { authorization: `Bearer ${key}` };
    if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
    const request = { method, path: `/v1/spaces/${spaceId}${path}`, headers, body: options.body };
    for (let attempt = 0; ; attempt++) {
      if (options.alive && !options.alive()) await never();
      try {
        const reply = await this.network.send(this.name, request);
        if (reply.statusCode >= 500) this.onServerError(reply, `${method} ${path}`);
        if (reply.body?.error?.code !== 'IDEMPOTENCY_KEY_IN_FLIGHT') return reply;
      } catch (error) {
        if (!(error instanceof NetworkError)) throw error;
      }
      await this.scheduler.sleep(Math.min(2_000, 50 * 2 ** Math.min(attempt, 6)), 'backoff');
    }
  }
}

/** A promise that never settles: what a crashed agent's pending work waits on forever. */
export function never(): Promise<never> {
  return new Promise<never>(() => undefined);
}
