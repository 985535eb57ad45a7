import { randomUUID } from 'node:crypto';
import { LocalNotifier, SystemClock, type Clock, type Notifier } from '@baton/core';
import pg from 'pg';

/**
 * Wakes long polls across every Baton server that shares one PostgreSQL database
 * (docs/architecture-notes.md, "Wake-ups across servers").
 *
 * - `notify(topic)` wakes this server's waiters at once and queues the topic for the others.
 *   Queued topics are published on the next event-loop tick as `SELECT pg_notify('baton_wake', …)`
 *   with at most one publish in flight: a commit's topics, and those of every commit that
 *   finished in the same tick or while the previous publish was out, travel in one
 *   notification (split when a payload would pass 8000 bytes). NotifyingStore calls notify
 *   after COMMIT, so publishing is after commit too, off the request's path: it never holds a
 *   transaction's locks nor delays its reply.
 * - A dedicated `pg.Client` (not from the pool, which would hand the session back and forth)
 *   runs `LISTEN baton_wake` and wakes local waiters for every topic another server published.
 *   Payloads carry a random server id, so a server ignores its own (it woke locally already).
 * - When the listener's connection drops it reconnects with exponential backoff, and until it
 *   is back every parked wait is woken once a second to re-read: late, never lost. On
 *   reconnect every wait is woken once more, for what was missed while down.
 * - A server alone on its database publishes nothing: a pg_notify nobody hears still cost a
 *   statement, a commit and one more socket write per request (measured: 4 socket writes per
 *   unbatched request before, 3.1 after; docs/benchmarks.md). Peers are counted every
 *   `peerCheckMs` in pg_stat_activity (the listeners' application_name), and a listener that
 *   (re)connects says hello on the channel, so the others publish again from its first
 *   moment; it wakes its own waits once more a second later, for a commit that raced its hello.
 *   Unknown (not yet counted, or the count failed) means publish.
 */

/** A pending wake of every wait on its topic. */
const all = Symbol('all');

/**
 * A counted wake crosses the wire as `topic#count` (topics never hold '#'). A server that does
 * not know the mark sees a topic nobody waits on; it still wakes on the aggregate topics every
 * event publishes as before.
 */
const countMark = '#';

function countedTopic(entry: string): { topic: string; count: number | undefined } {
  const match = /^(.*)#(\d{1,9})$/.exec(entry);
  return match ? { topic: match[1]!, count: Number(match[2]) } : { topic: entry, count: undefined };
}

/** The LISTEN/NOTIFY channel every Baton server on a database shares. */
export const wakeChannel = 'baton_wake';
/** PostgreSQL rejects payloads of 8000 bytes or more (default build). */
export const maxPayloadBytes = 7_999;

/** What crosses the wire: `{"s":"<server id>","t":["barrier:…","waiter:…","ready:…#2"]}` (`#n`: wake n waits, not all). */
export interface WakePayload {
  /** The publishing server's random id: a listener ignores its own. */
  s: string;
  /** Topics, as core/src/notifier.ts topicOf(): `${aggregateType}:${aggregateId}`. */
  t: string[];
  /** 1 on the hello a listener sends when it (re)connects: its peers publish from then on. */
  h?: 1;
}

/**
 * A notification is a transaction of its own, and waiting for its WAL flush would double the
 * fsyncs of a server that commits one transaction at a time (measured in
 * docs/architecture-notes.md); a wake lost to a crash costs nothing, the waits re-read at their
 * timeout. So synchronous_commit is off for this statement's transaction only (set_config's
 * `true`: SET LOCAL), which holds through any pooler, where a session setting would not.
 */
const publishStatement = `SELECT pg_notify($1, $2), set_config('synchronous_commit', 'off', true)`;

/** How long a listener may take to hear its own hello before it says LISTEN is not working. */
const helloEchoMs = 5_000;

/** Every listener's application_name starts so: peers are counted by it. */
const listenerName = 'baton-wake ';

/** pino's Logger fits; tests pass a recorder. */
export interface NotifierLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Runs one statement and answers its rows; PgDriver (the store's pool) fits. */
export interface Publisher {
  query(text: string, params?: readonly unknown[]): Promise<readonly unknown[]>;
}

export interface PgNotifierOptions {
  /**
   * postgres:// URL of the database the servers share; the listener connects here. Its
   * connections must keep their sessions (LISTEN is session state): PostgreSQL directly or a
   * session-mode pool, never a transaction pooler (BATON_NOTIFY_DATABASE_URL).
   */
  url: string;
  /** The server's clock: long-poll timeouts (as LocalNotifier). */
  clock: Clock;
  /**
   * Where pg_notify runs. Default (main.ts): a small pool of its own on `url`. The store's
   * PgDriver also fits; either way each publish commits with synchronous_commit off.
   */
  publisher?: Publisher;
  logger?: NotifierLogger;
  /**
   * Real time for the connection's own timing (reconnect backoff, the once-a-second re-read
   * while down). An outage happens in real time also when the server runs a manual clock, so
   * this is a SystemClock unless a test injects another.
   */
  timers?: Clock;
  /** Random by default; fixed in tests. */
  serverId?: string;
  /** While the listener is down, parked waits are woken this often to re-read. Default 1000. */
  degradedWakeMs?: number;
  /** Reconnect backoff: first delay and cap. Defaults 100 and 5000 ms. */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  /** How often the other servers' listeners are counted. Default 5000. */
  peerCheckMs?: number;
}

/** Whether another server listens: unknown until counted (and after a failed count) means publish. */
export type PeerState = 'unknown' | 'none' | 'present';

const silentLogger: NotifierLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** Splits topics into payloads that each stay under `limit` bytes. A topic too long alone is dropped (logged by the caller). */
export function encodePayloads(serverId: string, topics: Iterable<string>, limit = maxPayloadBytes): { payloads: string[]; tooLong: string[] } {
  const payloads: string[] = [];
  const tooLong: string[] = [];
  const overhead = Buffer.byteLength(JSON.stringify({ s: serverId, t: [] }));
  let batch: string[] = [];
  let size = overhead;
  for (const topic of topics) {
    const bytes = Buffer.byteLength(JSON.stringify(topic));
    if (overhead + bytes > limit) {
      tooLong.push(topic);
      continue;
    }
    const cost = bytes + (batch.length > 0 ? 1 : 0); // the comma
    if (size + cost > limit) {
      payloads.push(JSON.stringify({ s: serverId, t: batch } satisfies WakePayload));
      batch = [];
      size = overhead;
    }
    size += bytes + (batch.length > 0 ? 1 : 0);
    batch.push(topic);
  }
  if (batch.length > 0) payloads.push(JSON.stringify({ s: serverId, t: batch } satisfies WakePayload));
  return { payloads, tooLong };
}

function decodePayload(payload: string | undefined): WakePayload | undefined {
  if (!payload) return undefined;
  try {
    const value = JSON.parse(payload) as Partial<WakePayload>;
    if (typeof value.s !== 'string' || !Array.isArray(value.t)) return undefined;
    return { s: value.s, t: value.t.filter((t): t is string => typeof t === 'string') };
  } catch {
    return undefined;
  }
}

export interface PgNotifierStats {
  /** pg_notify statements run. */
  published: number;
  /** Topics woken because another server published them. */
  received: number;
  /** Own notifications that came back over LISTEN and were ignored. */
  ownIgnored: number;
  /** Times the listener (re)connected. */
  connects: number;
  /** Topics not published because no other server listened. */
  unpublished: number;
}

export class PgNotifier implements Notifier {
  readonly serverId: string;
  readonly stats: PgNotifierStats = { published: 0, received: 0, ownIgnored: 0, connects: 0, unpublished: 0 };
  private peers: PeerState = 'unknown';
  private readonly local: LocalNotifier;
  private readonly logger: NotifierLogger;
  private readonly timers: Clock;
  private readonly publisher: Publisher;
  private readonly ownPool: pg.Pool | undefined;
  private readonly degradedWakeMs: number;
  private readonly reconnectMinMs: number;
  private readonly reconnectMaxMs: number;
  private readonly peerCheckMs: number;

  private listener: pg.Client | undefined;
  private listening = false;
  /** Whether the listener heard any of its own notifications since its last hello. */
  private heardOwnHello = false;
  private closed = false;
  private failures = 0;
  private cancelReconnect: (() => void) | undefined;
  private cancelDegradedTick: (() => void) | undefined;
  private cancelPeerCheck: (() => void) | undefined;

  /** Topics to publish, each with how many waits to wake on every other server (or all). */
  private pending = new Map<string, number | typeof all>();
  private flushScheduled = false;
  private publishing: Promise<void> | undefined;

  constructor(private readonly options: PgNotifierOptions) {
    this.serverId = options.serverId ?? randomUUID();
    this.local = new LocalNotifier(options.clock);
    this.logger = options.logger ?? silentLogger;
    this.timers = options.timers ?? new SystemClock();
    this.degradedWakeMs = options.degradedWakeMs ?? 1_000;
    this.reconnectMinMs = options.reconnectMinMs ?? 100;
    this.reconnectMaxMs = options.reconnectMaxMs ?? 5_000;
    this.peerCheckMs = options.peerCheckMs ?? 5_000;
    if (options.publisher) {
      this.publisher = options.publisher;
    } else {
      // No startup parameter (poolers refuse them) and no session setting: each publish turns
      // synchronous_commit off for its own transaction (send()).
      const pool = new pg.Pool({ connectionString: options.url, max: 2, application_name: 'baton-wake-publish' });
      // pg-pool hangs the idle client on the error (`err.client`), and pino's serializer would
      // write all of it: a 5 kB line of connection internals per cut connection (seen in the
      // torture run's logs, docs/reliability.md).
      pool.on('error', (err) => this.logger.warn({ err: { message: err.message, code: (err as { code?: string }).code } }, 'pg notifier: publisher connection error'));
      this.ownPool = pool;
      this.publisher = { query: async (text, params) => (await pool.query(text, params as unknown[])).rows };
    }
  }

  /** Creates the notifier and makes a first attempt to listen (a failure degrades, not throws). */
  static async start(options: PgNotifierOptions): Promise<PgNotifier> {
    const notifier = new PgNotifier(options);
    await notifier.connect();
    notifier.schedulePeerCheck(0);
    return notifier;
  }

  /** Whether the listener is connected and LISTENing. */
  get isListening(): boolean {
    return this.listening;
  }

  /** Whether another server was seen listening at the last count (or hello). */
  get peerState(): PeerState {
    return this.peers;
  }

  /** Waits parked on this server, for tests and metrics. */
  get parked(): number {
    return this.local.parked;
  }

  notify(topic: string, count?: number): void {
    this.local.notify(topic, count);
    if (this.closed) return;
    const queued = this.pending.get(topic);
    // A wake of all absorbs counted ones; counted ones add up.
    this.pending.set(topic, queued === all || count === undefined ? all : (queued ?? 0) + count);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      // Once per tick: every commit that finished in this tick shares one round trip.
      setImmediate(() => void this.flush());
    }
  }

  subscribe(topic: string, listener: () => void): () => void {
    return this.local.subscribe(topic, listener);
  }

  wait(topic: string, maxWaitMs: number, signal?: AbortSignal): Promise<boolean> {
    return this.local.wait(topic, maxWaitMs, signal);
  }

  /** Publishes what is queued now instead of next tick; resolves when it is sent. */
  async flushNow(): Promise<void> {
    await this.flush();
  }

  /** Sends what is queued, stops listening and reconnecting. Waits already parked keep their timeouts. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.flushNow();
    this.closed = true;
    this.cancelReconnect?.();
    this.cancelDegradedTick?.();
    this.cancelPeerCheck?.();
    this.cancelReconnect = this.cancelDegradedTick = this.cancelPeerCheck = undefined;
    this.listening = false;
    const listener = this.listener;
    this.listener = undefined;
    await listener?.end().catch(() => undefined);
    await this.ownPool?.end().catch(() => undefined);
  }

  /**
   * At most one publish in flight: topics notified meanwhile wait for it and go together in
   * the next one, so under load a server sends at most one notification per round trip.
   */
  private async flush(): Promise<void> {
    this.flushScheduled = false;
    if (this.publishing) return this.publishing;
    this.publishing = (async () => {
      while (this.pending.size > 0) {
        const topics = [...this.pending].map(([topic, count]) => (count === all ? topic : `${topic}${countMark}${count}`));
        this.pending = new Map();
        await this.publish(topics);
      }
    })().finally(() => {
      this.publishing = undefined;
    });
    return this.publishing;
  }

  private async publish(topics: string[]): Promise<void> {
    if (this.peers === 'none') {
      this.stats.unpublished += topics.length;
      return;
    }
    await this.send(topics);
  }

  private async send(topics: string[], hello = false): Promise<void> {
    const { payloads, tooLong } = hello ? { payloads: [JSON.stringify({ s: this.serverId, t: [], h: 1 } satisfies WakePayload)], tooLong: [] } : encodePayloads(this.serverId, topics);
    if (tooLong.length > 0) this.logger.error({ topics: tooLong }, 'pg notifier: topic too long for a notification; not published');
    for (const payload of payloads) {
      try {
        await this.publisher.query(publishStatement, [wakeChannel, payload]);
        this.stats.published++;
      } catch (err) {
        // Other servers' waits then end at their own timeout (at most 30 s) or their next wake.
        this.logger.warn({ err, bytes: Buffer.byteLength(payload) }, 'pg notifier: publish failed; other servers wake at their timeout');
      }
    }
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    this.cancelReconnect = undefined;
    // Named, so an operator (and the reconnect test) can find the listener in pg_stat_activity.
    const client = new pg.Client({ connectionString: this.options.url, connectionTimeoutMillis: 5_000, application_name: `${listenerName}${this.serverId}`.slice(0, 63) });
    this.listener = client;
    let lost = false;
    const onLost = (err?: Error): void => {
      if (lost) return;
      lost = true;
      this.onListenerLost(client, err);
    };
    client.on('error', (err) => onLost(err));
    client.on('end', () => onLost());
    client.on('notification', (msg) => {
      if (msg.channel === wakeChannel) this.onNotification(msg.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${wakeChannel}`);
    } catch (err) {
      onLost(err instanceof Error ? err : new Error(String(err)));
      await client.end().catch(() => undefined);
      return;
    }
    if (lost || this.closed) return;
    this.listening = true;
    this.stats.connects++;
    const wasDown = this.failures > 0;
    this.failures = 0;
    this.cancelDegradedTick?.();
    this.cancelDegradedTick = undefined;
    if (wasDown) {
      this.logger.info({ serverId: this.serverId }, 'pg notifier: listener reconnected');
      // Whatever was published while we were not listening is gone: every wait re-reads once.
      this.local.wakeAll();
    }
    await this.sayHello();
  }

  /**
   * Tells the other servers this one listens, so those that counted no peer publish again at
   * once; a commit of theirs that raced the hello is caught by one more re-read a second later.
   */
  private async sayHello(): Promise<void> {
    const listener = this.listener;
    this.heardOwnHello = false;
    const publishedBefore = this.stats.published;
    await this.send([], true);
    const sent = this.stats.published > publishedBefore;
    this.timers.schedule(1_000, () => {
      if (!this.closed) this.local.wakeAll();
    });
    // A listener that does not hear its own hello hears nothing: its LISTEN went to a session a
    // pooler has since handed to others (transaction pooling), and wake-ups from other servers
    // are lost. Said once per connection, naming the fix; parked polls still end at their timeouts.
    this.timers.schedule(helloEchoMs, () => {
      if (!sent || this.closed || this.heardOwnHello || this.listener !== listener || !this.listening) return;
      this.logger.error(
        { serverId: this.serverId, waitedMs: helloEchoMs },
        'pg notifier: LISTEN does not hear its own notification; its URL may go through a transaction pooler. Set BATON_NOTIFY_DATABASE_URL to the database reached directly or through a session-mode pool (docs/deploy.md, "Connection poolers")',
      );
    });
  }

  private schedulePeerCheck(delayMs: number): void {
    if (this.closed) return;
    this.cancelPeerCheck = this.timers.schedule(delayMs, () => void this.countPeers().finally(() => this.schedulePeerCheck(this.peerCheckMs)));
  }

  /** Counts the other servers' listeners on this database; a failed count leaves `unknown` (publish). */
  private async countPeers(): Promise<void> {
    try {
      const [row] = (await this.publisher.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND starts_with(application_name, $1) AND application_name <> $2`,
        [listenerName, `${listenerName}${this.serverId}`.slice(0, 63)],
      )) as { n: number }[];
      if (this.closed) return;
      this.peers = (row?.n ?? 0) > 0 ? 'present' : 'none';
    } catch {
      this.peers = 'unknown';
    }
  }

  private onListenerLost(client: pg.Client, err: Error | undefined): void {
    if (this.listener !== client) return;
    this.listener = undefined;
    this.listening = false;
    if (this.closed) return;
    this.failures++;
    const delay = Math.min(this.reconnectMaxMs, this.reconnectMinMs * 2 ** (this.failures - 1));
    // Once until it reconnects, without the stack: a line with a stack per try of the reconnect
    // only buried the store's own line of the outage (store-outage.ts).
    if (this.failures === 1) {
      this.logger.warn({ err: { message: err?.message, code: (err as { code?: string } | undefined)?.code }, retryInMs: delay }, 'pg notifier: listener down; parked waits re-read every second until it is back');
    }
    void client.end().catch(() => undefined);
    this.startDegradedTicks();
    this.cancelReconnect?.();
    this.cancelReconnect = this.timers.schedule(delay, () => void this.connect());
  }

  private startDegradedTicks(): void {
    if (this.cancelDegradedTick) return;
    const tick = (): void => {
      if (this.listening || this.closed) {
        this.cancelDegradedTick = undefined;
        return;
      }
      this.local.wakeAll();
      this.cancelDegradedTick = this.timers.schedule(this.degradedWakeMs, tick);
    };
    this.cancelDegradedTick = this.timers.schedule(this.degradedWakeMs, tick);
  }

  private onNotification(payload: string | undefined): void {
    const decoded = decodePayload(payload);
    if (!decoded) {
      this.logger.warn({ payload: payload?.slice(0, 200) }, 'pg notifier: ignored a malformed notification');
      return;
    }
    if (decoded.s === this.serverId) {
      this.heardOwnHello = true;
      this.stats.ownIgnored++;
      return;
    }
    // Anything from another server proves it listens: publish again without waiting for a count.
    this.peers = 'present';
    for (const entry of decoded.t) {
      this.stats.received++;
      const { topic, count } = countedTopic(entry);
      this.local.notify(topic, count);
    }
  }
}
