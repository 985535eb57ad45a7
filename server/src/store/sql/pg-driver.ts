import { createHash } from 'node:crypto';
import pg from 'pg';
import type { SqlDriver, SqlParam, SqlQueryable } from './driver';
import { StatementBatch, type Statement, type StatementResult } from './pg-statement-batch';
import { RoundTripMeter } from './round-trips';
import { asStoreError } from './unreachable';

export interface PgDriverOptions {
  /** Pool size; default 10. */
  max?: number;
  /**
   * Where connection errors that no query is waiting for go (an idle pooled client whose
   * server went away, a checked-out client between statements). Without a listener Node
   * would crash the process on them. Default: one line on stderr.
   */
  onConnectionError?: (error: Error) => void;
  /**
   * How the connections behind the URL keep their sessions (BATON_DATABASE_POOL_MODE).
   * `session` (default): each connection is one PostgreSQL session for as long as it is open
   * (PostgreSQL directly, or a pooler in session mode). `transaction`: a pooler may hand each
   * transaction, and each statement outside one, to another session (PgBouncer's transaction
   * mode), so nothing may rely on session state: no prepared statement names, no session SET.
   */
  poolMode?: PoolMode;
}

export type PoolMode = 'session' | 'transaction';

const stderrConnectionError = (error: Error): void => {
  process.stderr.write(`baton: postgres connection error: ${error.message}\n`);
};

/**
 * PostgreSQL through a `pg` Pool whose connections pipeline (pg 8.23 `pipeline: true`): a
 * statement is sent without waiting for the replies of those before it. A transaction's BEGIN
 * and its writes therefore cost no round trip of their own; they travel with the next read or
 * with the COMMIT (PipelinedTransaction below). On this machine a round trip is 0.2 to 0.3 ms
 * and the commit's WAL flush about 0.5 ms, so round trips, not JavaScript, set throughput.
 */
export class PgDriver implements SqlDriver {
  readonly kind = 'postgres' as const;
  /** Round trips and statements of every connection, since start (round-trips.ts). */
  readonly meter = new RoundTripMeter();
  private readonly pool: pg.Pool;
  private readonly onConnectionError: (error: Error) => void;
  readonly poolMode: PoolMode;

  constructor(url: string, options: PgDriverOptions = {}) {
    this.onConnectionError = options.onConnectionError ?? stderrConnectionError;
    this.poolMode = options.poolMode ?? 'session';
    // No startup parameter beyond user, database and application_name: poolers and proxies
    // (PgBouncer: "unsupported startup parameter: options") refuse the others.
    // `pipeline` is a Client option the Pool passes on; @types/pg does not know it yet.
    this.pool = new pg.Pool({ connectionString: url, max: options.max ?? 10, pipeline: true } as pg.PoolConfig);
    this.pool.on('error', (error) => this.onConnectionError(error));
    if (this.poolMode === 'session') this.pool.on('connect', (client) => this.configureSession(client));
  }

  /**
   * JIT off for the session, sent as a connection's first statement (the pool emits 'connect'
   * before it hands the client out, and a client runs its queries in order). Why: every
   * statement here is short, and a plan whose cost passes jit_above_cost by itself (a batch
   * claim planned with sorting disabled, as claims once were) was measured at 360 ms of JIT
   * compilation for 1 ms of work. Today's hot statements never reach JIT: measured under EXPLAIN
   * at a backlog of 2,000 READY tasks (test/hot-plans.pg.test.ts), the costliest of their 82
   * plans is estimated at 235, and JIT starts at jit_above_cost 100,000, so with jit on they
   * run the same. The SET guards against a plan gone wrong, at one statement per new
   * connection. Through a transaction pooler a session SET would land on whichever session ran
   * it, so it is not sent there; `ALTER ROLE … SET jit = off` gives the same guard in every mode.
   */
  private configureSession(client: pg.PoolClient): void {
    client.query('SET jit = off').catch((error: unknown) => this.onConnectionError(error instanceof Error ? error : new Error(String(error))));
  }

  /**
   * The pool's connections now (open, idle) and the checkouts queued for one: read by the metrics
   * at each scrape, from the pool's own counters, with no statement.
   */
  poolStats(): { total: number; idle: number; waiting: number } {
    return { total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount };
  }

  async query<R>(text: string, params: readonly SqlParam[] = []): Promise<R[]> {
    this.meter.alone();
    try {
      const result = await this.pool.query(statement(text, params, this.poolMode === 'session'));
      return result.rows as R[];
    } catch (error) {
      throw asStoreError(error);
    }
  }

  async write(text: string, params: readonly SqlParam[] = []): Promise<void> {
    await this.query(text, params);
  }

  async exec(script: string): Promise<void> {
    this.meter.alone();
    await this.pool.query(script).catch((error: unknown) => {
      throw asStoreError(error);
    });
  }

  /**
   * A connection that cannot be had or is lost (unreachable.ts) fails the transaction with
   * StoreUnavailable, so the server answers 503 and not 500; inside `fn` the repositories still
   * see pg's own errors.
   */
  async transaction<T>(fn: (q: SqlQueryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect().catch((error: unknown) => {
      throw asStoreError(error);
    });
    // The pool only listens for errors of idle clients; while this one is checked out an
    // 'error' event with no listener would be thrown as an uncaught exception.
    const onError = (error: Error): void => this.onConnectionError(error);
    client.on('error', onError);
    const tx = new PipelinedTransaction(client, this.meter, this.poolMode === 'session');
    let broken: Error | undefined;
    try {
      void tx.write('BEGIN');
      const result = await fn(tx);
      await tx.commit();
      return result;
    } catch (error) {
      broken = await tx.rollback();
      throw asStoreError(error);
    } finally {
      // A client whose ROLLBACK failed is in an unknown state: destroy it rather than reuse it.
      // It keeps its listener: the server's FATAL (57P01 on a restart) can arrive after the
      // release, with no statement of pg's own in flight, and an 'error' event nobody listens
      // to ends the process (a torture run's server died so during a PostgreSQL restart).
      if (broken === undefined) client.off('error', onError);
      client.release(broken);
    }
  }

  /**
   * Resolves once every connection is closed. pool.end() alone resolves as soon as it has
   * asked them to close, and a DROP DATABASE right after would then cut them off mid-goodbye.
   */
  async close(): Promise<void> {
    let open = this.pool.totalCount;
    const allRemoved = new Promise<void>((resolve) => {
      if (open === 0) resolve();
      this.pool.on('remove', () => {
        if (--open === 0) resolve();
      });
    });
    await this.pool.end();
    await allRemoved;
  }
}

/**
 * One transaction on one pipelining connection. Writes are sent and not awaited; the first one
 * to fail is remembered and fails every later query and the commit. PostgreSQL aborts the
 * transaction at that failed statement, so the pipelined statements after it (the COMMIT
 * included) do nothing: a COMMIT then answers ROLLBACK, which is why commit() checks the
 * writes before it trusts it.
 */
class PipelinedTransaction implements SqlQueryable {
  private inFlight = 0;
  /** The first write that failed: the transaction cannot commit. */
  private failure: { error: unknown } | undefined;
  /** The first statement of any kind that failed, for the 25P02 answers that follow it. */
  private firstFailure: { error: unknown } | undefined;
  private readonly writes: Promise<void>[] = [];
  /** Statements sent since the last flush: they leave together, as one pipeline segment. */
  private pending: Statement[] = [];

  constructor(
    private readonly client: pg.PoolClient,
    private readonly meter: RoundTripMeter,
    /** Whether statements with parameters are prepared under a name (PgDriverOptions.poolMode). */
    private readonly named: boolean,
  ) {}

  async query<R>(text: string, params: readonly SqlParam[] = []): Promise<R[]> {
    try {
      return (await this.send(text, params)).rows as R[];
    } catch (error) {
      // After a failed statement PostgreSQL answers every later one with 25P02 (transaction
      // aborted); the first failure is the one that says what went wrong.
      throw isAborted(error) && this.firstFailure ? this.firstFailure.error : error;
    }
  }

  write(text: string, params: readonly SqlParam[] = []): Promise<void> {
    this.writes.push(
      this.send(text, params).then(
        () => undefined,
        (error: unknown) => {
          this.failure ??= { error };
        },
      ),
    );
    return Promise.resolve();
  }

  /** A script of several statements goes by the simple protocol, after what is pending. */
  async exec(script: string): Promise<void> {
    this.flush();
    this.meter.count(this.inFlight === 0);
    await this.client.query(script);
  }

  async commit(): Promise<void> {
    const commit = this.send('COMMIT', []);
    await Promise.all(this.writes);
    const result = await commit.catch((error: unknown) => {
      throw this.failure ? this.failure.error : error;
    });
    if (this.failure) throw this.failure.error;
    // COMMIT of an aborted transaction answers ROLLBACK: a failure no write reported.
    if (result.command !== 'COMMIT') throw new Error(`COMMIT answered ${result.command}`);
  }

  /** Returns the error when the connection cannot even roll back (it is then discarded). */
  async rollback(): Promise<Error | undefined> {
    try {
      const rollback = this.send('ROLLBACK', []);
      await Promise.all(this.writes);
      await rollback;
      return undefined;
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
  }

  /** A statement is a new round trip when none of this connection's is still in flight. */
  private send(text: string, params: readonly SqlParam[]): Promise<StatementResult> {
    this.meter.count(this.inFlight === 0);
    this.inFlight += 1;
    const sent = new Promise<StatementResult>((resolve, reject) => {
      this.pending.push({ name: params.length === 0 || !this.named ? '' : statementName(text), text, values: params, resolve, reject });
    });
    if (this.pending.length === 1) process.nextTick(() => this.flush());
    sent.then(
      () => {
        this.inFlight -= 1;
      },
      (error: unknown) => {
        this.inFlight -= 1;
        if (!isAborted(error)) this.firstFailure ??= { error };
      },
    );
    return sent;
  }

  /**
   * Sends what is pending as one segment (pg-statement-batch.ts). Flushing on the next tick
   * holds a statement only until the current run of promise continuations is over (a nextTick
   * queued from one runs once the microtask queue is empty), so BEGIN, the writes and the read
   * of one round trip leave together, and nothing waits that could have gone sooner.
   */
  private flush(): void {
    if (this.pending.length === 0) return;
    const batch = new StatementBatch(this.pending);
    this.pending = [];
    // A submittable's failures reach it through handleError, never as a throw or a rejection.
    this.client.query(batch as unknown as pg.QueryConfig);
  }
}

/**
 * The statement was refused because an earlier one of the pipeline failed:
 * in_failed_sql_transaction, or invalid_sql_statement_name for a named statement whose Parse went
 * out with that earlier, failed one (pg then sent this one without a Parse of its own).
 */
const refusedAfterFailure = new Set(['25P02', '26000']);
const isAborted = (error: unknown): boolean => typeof error === 'object' && error !== null && refusedAfterFailure.has(String((error as { code?: unknown }).code));

/**
 * Every statement with parameters is a named prepared statement: PostgreSQL parses and plans it
 * once per connection instead of on every execution. The name is a hash of the text, so the
 * same text always has the same name (pg refuses one name for two texts) and the set of names is
 * the set of statement texts the repositories build, which is finite: texts vary only with the
 * number of rows of a multi-row insert or of scopes in a claim. Measured (issue 12): PostgreSQL
 * was the busiest process of a drain, with its backends above one of the two cores.
 */
const statementNames = new Map<string, string>();

function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `baton_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
    statementNames.set(text, name);
  }
  return name;
}

/**
 * Unnamed (`named` false): parsed and planned on every execution, as a transaction pooler needs,
 * since a name prepared on one PostgreSQL session is unknown to the next one the pooler picks.
 */
function statement(text: string, params: readonly SqlParam[], named: boolean): pg.QueryConfig {
  if (params.length === 0) return { text };
  if (!named) return { text, values: params as unknown[] };
  return { name: statementName(text), text, values: params as unknown[] };
}
