import { createClient, type BatonClient, type RuntimeClock, type RuntimeRandom, type Transport, type TransportResponse } from '@baton-coordination/runtime';
import { never } from './client';
import { requestTimeoutMs, type Network } from './network';
import type { SimRandom } from './rng';
import type { Scheduler } from './scheduler';
import type { HttpReply, HttpRequest } from './http';

/**
 * The seam between @baton-coordination/runtime and the simulator: a runtime `Transport` that carries each
 * attempt over the simulated network (its delays, lost requests, lost replies and duplicates)
 * into the in-process server, and a `RuntimeClock` and `RuntimeRandom` on the scheduler's
 * virtual time and the run's seeded random streams. With these the runtime's client and
 * worker loop run inside a simulation exactly as they run in production, and stay
 * deterministic: no real timer, socket or Math.random is touched.
 *
 * `alive` models a crash: once it turns false (the agent's session crashed) every transport
 * call and every sleep of that runtime instance never settles, so the instance freezes where
 * it is, sends nothing more, and its leases run out on the server, like a killed process.
 */

export interface SimTransportOptions {
  /** Who sends: the trace names each request by it. */
  name: string;
  network: Network;
  alive?: () => boolean;
  /** A 5xx reply: the simulator holds the server to never answering one. */
  onServerError?: (reply: HttpReply, what: string) => void;
}

/** One attempt per call, as a transport must: retries and timeouts are the runtime client's business. */
export function simTransport(options: SimTransportOptions): Transport {
  const { name, network, alive } = options;
  return async (request) => {
    if (alive && !alive()) await never();
    if (request.signal.aborted) throw request.signal.reason;
    const url = new URL(request.url);
    // The server host speaks GET and POST; the runtime's only PUT (/limits) goes through as is.
    const httpRequest: HttpRequest = {
      method: request.method as HttpRequest['method'],
      path: `${url.pathname}${url.search}`,
      headers: { ...request.headers },
      ...(request.body === undefined ? {} : { body: JSON.parse(request.body) as unknown }),
    };
    // The network rejects with NetworkError on a lost request or reply (after its timeout) or a
    // refused connection; the client turns that into a NETWORK error and retries.
    const reply = await network.send(name, httpRequest);
    if (alive && !alive()) await never();
    if (reply.statusCode >= 500) options.onServerError?.(reply, `${request.method} ${url.pathname}`);
    return toTransportResponse(reply);
  };
}

function toTransportResponse(reply: HttpReply): TransportResponse {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(reply.headers)) {
    if (value === undefined) continue;
    headers[key.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return { status: reply.statusCode, headers, body: reply.body === undefined ? '' : JSON.stringify(reply.body) };
}

/**
 * Virtual time: `now` is the scheduler's clock, off by `skewMs` (an agent's clock skew), `sleep`
 * a scheduler timer. An abort rejects at once with the signal's reason (the queued timer then
 * fires as a no-op). After `alive` turns false a sleep never settles.
 */
export function simClock(scheduler: Scheduler, label: string, alive?: () => boolean, skewMs = 0): RuntimeClock {
  return {
    now: () => scheduler.now() + skewMs,
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        if (alive && !alive()) return;
        if (signal?.aborted) return reject(signal.reason);
        let done = false;
        const onAbort = (): void => {
          if (done) return;
          done = true;
          reject(signal!.reason);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        // Whole milliseconds: the simulated clock moves by integers (the runtime computes thirds of a lease).
        scheduler.after(Math.max(0, Math.ceil(ms)), label, () => {
          if (done) return;
          done = true;
          signal?.removeEventListener('abort', onAbort);
          if (alive && !alive()) return;
          resolve();
        });
      }),
  };
}

/** The runtime's jitter from a seeded stream. */
export function simRandom(rng: SimRandom): RuntimeRandom {
  return { next: () => rng.float() };
}

export interface SimClientOptions {
  name: string;
  network: Network;
  scheduler: Scheduler;
  /** A stream of this client alone: backoff jitter and Idempotency-Keys. */
  rng: SimRandom;
  auth: () => { spaceId: string; key: string };
  alive?: () => boolean;
  onServerError?: (reply: HttpReply, what: string) => void;
}

/** The origin the runtime client is given: the transport keeps only path and query. */
export const simBaseUrl = 'http://baton.sim';

/**
 * The runtime's own client (`createClient`) on the simulated network, clock and random stream.
 * Idempotency-Keys are seeded UUIDs; the per-attempt timeout sits above the network's, so a
 * lost message is noticed by the network's timeout as before.
 */
export function createSimClient(options: SimClientOptions): BatonClient {
  const { spaceId, key } = options.auth();
  return createClient({
    baseUrl: simBaseUrl,
    apiKey: key,
    spaceId,
    transport: simTransport(options),
    clock: simClock(options.scheduler, `${options.name} runtime`, options.alive),
    random: simRandom(options.rng),
    timeoutMs: requestTimeoutMs + 1_000,
    newIdempotencyKey: () => options.rng.uuid(),
  });
}
