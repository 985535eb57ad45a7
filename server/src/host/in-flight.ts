import type { Server } from 'node:http';

/**
 * Requests in flight on the listening server, so that a drain can close the connections left
 * once none carries a request. Node's server.close() (and Fastify's close on top of it) waits
 * for every open connection to end, and closeIdleConnections() leaves alone a connection that
 * has not sent a request yet or is halfway through its headers: one such client held a drain
 * for over 30 s (until its own timeout). Counting on the raw server sees every request, the
 * ones a client aborts included ('close' fires on finish and on abort).
 */
export class InFlightRequests {
  private count = 0;
  private readonly waiters = new Set<() => void>();

  attach(server: Server): void {
    server.on('request', (_request, response) => {
      this.count += 1;
      response.once('close', () => {
        this.count -= 1;
        if (this.count === 0) for (const wake of [...this.waiters]) wake();
      });
    });
  }

  get size(): number {
    return this.count;
  }

  /** Resolves once no request is in flight, or after `timeoutMs` (a client that keeps sending must not hold a drain forever). */
  idle(timeoutMs: number): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.waiters.add(done);
    });
  }
}
