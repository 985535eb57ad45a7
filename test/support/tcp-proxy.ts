import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on a loopback port in front of PostgreSQL, which a test can take down: an outage of
 * the database as the server sees it, without stopping the PostgreSQL that other tests share.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly pairs = new Set<{ client: Socket; upstream: Socket }>();
  private holding = false;

  private constructor(
    private readonly target: { host: string; port: number },
    readonly port: number,
  ) {}

  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const proxy = new TcpProxy(target, port);
    await proxy.up();
    return proxy;
  }

  /** Open connections through the proxy now. */
  get connections(): number {
    return this.pairs.size;
  }

  /** Takes connections again on the same port, and passes replies on (held ones included). */
  async up(): Promise<void> {
    this.holding = false;
    for (const { upstream } of this.pairs) upstream.resume();
    if (this.server) return;
    const server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.server = server;
  }

  /**
   * Stops passing PostgreSQL's replies on: statements still reach it and run (locks are taken,
   * transactions stay open), but the server waits for answers, as over a network that broke one way.
   */
  holdReplies(): void {
    this.holding = true;
    for (const { upstream } of this.pairs) upstream.pause();
  }

  /** Refuses new connections (ECONNREFUSED) and resets every open one: PostgreSQL looks down. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    const closed = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    for (const { client, upstream } of this.pairs) {
      client.resetAndDestroy();
      upstream.destroy();
    }
    this.pairs.clear();
    await closed;
  }

  async close(): Promise<void> {
    await this.down();
  }

  private accept(client: Socket): void {
    const upstream = connect(this.target.port, this.target.host);
    const pair = { client, upstream };
    this.pairs.add(pair);
    const end = (): void => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.on('data', (chunk: Buffer) => upstream.write(chunk));
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    if (this.holding) upstream.pause();
  }
}
