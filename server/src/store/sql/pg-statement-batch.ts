import { createRequire } from 'node:module';
import pg from 'pg';

/**
 * Several statements sent to PostgreSQL as one pipeline segment: Parse (first use on a
 * connection only), Bind, Describe (first use of a text only) and Execute for each, then one Sync.
 *
 * Why not pg's own pipelining alone: pg ends every statement with a Sync, and PostgreSQL flushes
 * its output at every Sync, one `send` system call per statement on its side and one wake-up of
 * the reading server per statement on ours. Profiled in a drain (issue 12), system calls were
 * the largest cost of both processes on this 2-vCPU VM (36 % of the server's main thread in
 * `writev` alone). One Sync per round trip makes it one flush per round trip.
 *
 * What a Sync per statement gave and one per segment keeps: statements run in order; when one
 * fails, PostgreSQL skips the rest of the segment (they are answered `25P02`, as an aborted
 * transaction answers them) and the transaction stays aborted, so nothing after a failure
 * commits. Only transactions use segments (PipelinedTransaction, pg-driver.ts): outside one, a
 * Sync ends an implicit transaction, and statements would no longer commit one by one.
 *
 * The batch is a pg "submittable": the pool's client queues it like a query and hands it the
 * backend's messages until the segment's ReadyForQuery.
 */

export interface StatementResult {
  /** The command tag's verb: `SELECT`, `INSERT`, `COMMIT`, or `ROLLBACK` for a COMMIT of an aborted transaction. */
  command: string;
  rows: Record<string, unknown>[];
}

export interface Statement {
  /** A prepared statement's name, or '' for the unnamed statement (parsed on every use). */
  name: string;
  text: string;
  values: readonly unknown[];
  resolve(result: StatementResult): void;
  reject(error: unknown): void;
}

/** What pg's Connection offers that the batch uses; @types/pg does not describe it. */
interface Connection {
  stream: { cork(): void; uncork(): void };
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
  parse(query: { text: string; name: string; types: unknown[] }): void;
  bind(config: { portal: string; statement: string; values: unknown[]; binary: boolean }): void;
  describe(msg: { type: 'P'; name: string }): void;
  execute(config: Record<string, never>): void;
  sync(): void;
  on(event: 'parseComplete', listener: () => void): void;
  off(event: 'parseComplete', listener: () => void): void;
}

interface FieldDescription {
  name: string;
  dataTypeID: number;
}

/** Columns of a statement's rows and their parsers, learned from its first Describe. */
interface RowShape {
  names: string[];
  parsers: ((raw: string) => unknown)[];
}

const requirePg = createRequire(import.meta.url);
const { prepareValue } = requirePg('pg/lib/utils') as { prepareValue(value: unknown): unknown };

/**
 * Row shapes by statement text, per connection (kept beside pg's own record of what the
 * connection has prepared): knowing them spares the Describe and the RowDescription PostgreSQL
 * would otherwise send with every execution.
 */
const shapesByConnection = new WeakMap<Connection, Map<string, RowShape>>();
const noRows: RowShape = { names: [], parsers: [] };

/**
 * timestamptz columns stay text here: codec.toMs reads them with Date.parse, which takes
 * PostgreSQL's output ('2026-11-28 02:41:41.123456+00', whatever the offset) to the epoch ms pg's
 * own parser gives, without a regular expression and a Date per value (1.6 % of the server's CPU
 * in a batched drain went to that parser). test/timestamptz-text.test.ts holds the agreement
 * over PostgreSQL's own output.
 */
const timestamptzOid = 1184;
const asText = (raw: string): string => raw;
const parserOf = (oid: number): ((raw: string) => unknown) => (oid === timestamptzOid ? asText : (pg.types.getTypeParser(oid, 'text') as (raw: string) => unknown));

function shapeOf(fields: readonly FieldDescription[]): RowShape {
  return { names: fields.map((f) => f.name), parsers: fields.map((f) => parserOf(f.dataTypeID)) };
}

function abortedError(): Error {
  return Object.assign(new Error('not run: an earlier statement of its pipeline failed'), { code: '25P02' });
}

/**
 * pg's pipeline mode accepts only its own Query class (it refuses cursors, which keep a portal
 * open across round trips); a batch closes its portal with every statement, so it passes as one.
 */
const PgQuery = pg.Query as unknown as new (config: { text: string }) => object;

export class StatementBatch extends PgQuery {
  private answered = 0;
  private shape: RowShape | undefined;
  private collected: Record<string, unknown>[] = [];
  /** Statements whose Parse went out in this batch, in order, until PostgreSQL confirms each. */
  private parsing: Statement[] = [];
  private connection: Connection | undefined;
  private shapes = new Map<string, RowShape>();
  private readonly onParseComplete = (): void => this.parsed();

  constructor(private readonly statements: readonly Statement[]) {
    super({ text: '' });
  }

  /** Called by pg's client when the batch's turn comes to be written. Returns an error instead of throwing. */
  submit(connection: Connection): Error | null {
    let values: unknown[][];
    try {
      // Mapping a value can throw (a cyclic object); map all before writing anything.
      values = this.statements.map((s) => s.values.map((v) => prepareValue(v)));
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
    this.connection = connection;
    let shapes = shapesByConnection.get(connection);
    if (shapes === undefined) shapesByConnection.set(connection, (shapes = new Map()));
    this.shapes = shapes;
    connection.stream.cork();
    try {
      this.statements.forEach((s, i) => this.write(connection, s, values[i]!));
      connection.sync();
    } finally {
      connection.stream.uncork();
    }
    if (this.parsing.length > 0) connection.on('parseComplete', this.onParseComplete);
    return null;
  }

  private write(connection: Connection, s: Statement, values: unknown[]): void {
    const known = s.name !== '' && (connection.parsedStatements[s.name] !== undefined || connection.submittedNamedStatements[s.name] !== undefined);
    if (!known) {
      connection.parse({ text: s.text, name: s.name, types: [] });
      if (s.name !== '') connection.submittedNamedStatements[s.name] = s.text;
      this.parsing.push(s);
    }
    connection.bind({ portal: '', statement: s.name, values, binary: false });
    if (!this.shapes.has(s.text)) connection.describe({ type: 'P', name: '' });
    connection.execute({});
  }

  /** ParseCompletes arrive in the order the Parses went out. */
  private parsed(): void {
    const s = this.parsing.shift();
    if (s === undefined || this.connection === undefined) return;
    if (s.name !== '') {
      this.connection.parsedStatements[s.name] = s.text;
      delete this.connection.submittedNamedStatements[s.name];
    }
  }

  handleRowDescription(msg: { fields: FieldDescription[] }): void {
    const s = this.current();
    this.shape = shapeOf(msg.fields);
    this.shapes.set(s.text, this.shape);
  }

  handleDataRow(msg: { fields: (string | null)[] }): void {
    const shape = this.shape ?? this.shapes.get(this.current().text) ?? noRows;
    const row: Record<string, unknown> = {};
    for (let i = 0; i < msg.fields.length; i++) {
      const raw = msg.fields[i];
      row[shape.names[i]!] = raw === null || raw === undefined ? null : shape.parsers[i]!(raw);
    }
    this.collected.push(row);
  }

  handleCommandComplete(msg: { text: string }): void {
    const s = this.current();
    // A statement described without a RowDescription (an INSERT without RETURNING) returns no rows.
    if (!this.shapes.has(s.text)) this.shapes.set(s.text, noRows);
    const rows = this.collected;
    this.next();
    s.resolve({ command: msg.text.split(' ', 1)[0]!, rows });
  }

  handleEmptyQuery(): void {
    const s = this.current();
    this.next();
    s.resolve({ command: '', rows: [] });
  }

  /** A statement failed (the rest of the segment was skipped), or the connection broke. */
  handleError(error: unknown): void {
    this.stopListening();
    const failed = this.statements[this.answered];
    failed?.reject(error);
    for (const s of this.statements.slice(this.answered + 1)) s.reject(abortedError());
    // A Parse that succeeded was confirmed before the error arrived; those still unconfirmed
    // never happened, and must go out again on the statement's next use.
    for (const s of this.parsing) if (s.name !== '') delete this.connection?.submittedNamedStatements[s.name];
    this.answered = this.statements.length;
  }

  handleReadyForQuery(): void {
    this.stopListening();
    if (this.answered < this.statements.length) this.handleError(new Error(`pipeline segment ended after ${this.answered} of ${this.statements.length} statements`));
  }

  handlePortalSuspended(): void {
    this.handleError(new Error('portal suspended: a batched statement asked for rows in pages'));
  }

  handleCopyInResponse(): void {
    this.handleError(new Error('COPY is not supported in a statement batch'));
  }

  handleCopyData(): void {}

  private current(): Statement {
    const s = this.statements[this.answered];
    if (s === undefined) throw new Error('PostgreSQL answered more statements than the batch sent');
    return s;
  }

  private next(): void {
    this.answered += 1;
    this.shape = undefined;
    this.collected = [];
  }

  private stopListening(): void {
    this.connection?.off('parseComplete', this.onParseComplete);
  }
}
