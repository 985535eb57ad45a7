import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the receiver got. */
export interface Receipt {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** The status it answered with; 'held' while it has not answered (a held request never is). */
  answered: number | 'held';
}

/** How a path answers; the default is 204. */
export type Behaviour = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * A webhook receiver on 127.0.0.1 for tests: records every request, answers each path as its
 * behaviour says (204 by default), and holds the requests `hold` picks, never answering them, so
 * a test can keep an attempt in flight (whenHeld) and later drop it (releaseHeld).
 */
export class WebhookReceiver {
  readonly received: Receipt[] = [];
  readonly behaviours = new Map<string, Behaviour>();
  hold: ((receipt: Receipt) => boolean) | undefined;
  readonly held: { receipt: Receipt; req: IncomingMessage; res: ServerResponse }[] = [];
  private heldWaiters: (() => void)[] = [];
  private server: Server | undefined;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.answer(req, res, Buffer.concat(chunks).toString('utf8')));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server!.address() as AddressInfo).port;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  at(path: string): Receipt[] {
    return this.received.filter((r) => r.path === path);
  }

  /** Resolves once a request has been held (at once if one has). */
  whenHeld(timeoutMs: number): Promise<void> {
    if (this.held.length > 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no request was held')), timeoutMs);
      this.heldWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Drops the connections of held requests without an answer. */
  releaseHeld(): void {
    for (const { req } of this.held) req.socket.destroy();
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }

  private answer(req: IncomingMessage, res: ServerResponse, body: string): void {
    const receipt: Receipt = { path: req.url ?? '/', headers: req.headers as Record<string, string>, body, answered: 'held' };
    this.received.push(receipt);
    if (this.hold?.(receipt)) {
      this.held.push({ receipt, req, res });
      for (const wake of this.heldWaiters.splice(0)) wake();
      return;
    }
    const behaviour = this.behaviours.get(receipt.path);
    if (!behaviour) {
      receipt.answered = 204;
      res.writeHead(204).end();
      return;
    }
    res.once('finish', () => (receipt.answered = res.statusCode));
    behaviour(req, res);
  }
}
