import { assert } from '@baton/core';
import type { SqlParam, SqlQueryable } from './driver';
import { loneStatement, type WriteParts } from './repositories/guarded-write';

/**
 * Writes of one kind (a task update, an event insert) that a transaction may send as one
 * statement instead of one each. Why: a batch of 50 completes made 150 statements (message
 * update, task update, events), and PostgreSQL's cost per statement (bind, execute, plan,
 * snapshot, its share of the protocol) is most of what such small writes cost. A batch's
 * complete-batch of 50 now sends three. The kinds held at a flush then go as one statement
 * together (combinedStatement): measured on this machine's PostgreSQL, a transaction of four
 * one-row writes cost its backend 245 to 310 µs of CPU as four statements and 165 to 200 µs as
 * one.
 */
export interface Coalescible<Row> {
  /** Writes of one key may be merged. */
  readonly key: string;
  /** One write applying `rows` in order (the same write as a lone one for one row). */
  statement(rows: readonly Row[]): WriteParts;
  /**
   * Held until the transaction commits, after every other statement, instead of leaving with the
   * next one. For the journal's appends: an event's position is drawn as it is inserted, and it
   * must be drawn after everything the transaction observed (docs/event-journal.md, "Causal
   * order"). Nothing may read what such a kind writes within the transaction.
   */
  readonly heldToCommit?: boolean;
}

/**
 * A transaction's queryable that holds coalescible writes back until something else is sent
 * (a read, another write, the COMMIT): then every held kind leaves, each as one data-modifying
 * CTE of one statement. Writes of different kinds may thus be reordered among themselves (the
 * CTEs of a statement run in no set order, on one snapshot), never across another statement;
 * that is safe for the writes made coalescible, which are blind (nothing reads their result),
 * guarded in the statement itself, and touch rows whose locks the transaction already holds or
 * that are new. A row written twice (same identity, whatever the kind: an update after its
 * insert, a second update) flushes what is held before it is held, so a statement never writes
 * one row twice and a row is inserted before it is updated. Foreign keys between rows of one
 * statement hold: PostgreSQL checks them when the whole statement has run.
 */
/** Rows held to commit, per kind, when a savepoint began (CoalescingQueryable.savepointMark). */
export type SavepointMark = ReadonlyMap<string, number>;

export class CoalescingQueryable implements SqlQueryable {
  private readonly held = new Map<string, { kind: Coalescible<unknown>; rows: unknown[] }>();
  /** Rows held, of every kind: a row written again (an update after its insert, a second update) flushes what is held first. */
  private readonly identities = new Set<string>();
  /** Flushed writes not yet known to have succeeded (PGlite runs them before the next statement; pg pipelines them). */
  private flushed: Promise<void>[] = [];

  constructor(private readonly inner: SqlQueryable) {}

  hold<Row>(kind: Coalescible<Row>, row: Row, identity: string | undefined): Promise<void> {
    if (identity !== undefined && this.identities.has(identity)) this.flush(false);
    let group = this.held.get(kind.key);
    if (!group) {
      group = { kind: kind as Coalescible<unknown>, rows: [] };
      this.held.set(kind.key, group);
    }
    group.rows.push(row);
    if (identity !== undefined) this.identities.add(identity);
    return Promise.resolve();
  }

  async query<R>(text: string, params?: readonly SqlParam[]): Promise<R[]> {
    this.flush(false);
    return this.after(this.inner.query<R>(text, params));
  }

  async write(text: string, params?: readonly SqlParam[]): Promise<void> {
    this.flush(false);
    return this.after(this.inner.write(text, params));
  }

  async exec(script: string): Promise<void> {
    this.flush(false);
    return this.after(this.inner.exec(script));
  }

  /**
   * Where a savepoint begins among the rows held to commit. The other kinds need no mark: the
   * SAVEPOINT statement flushes them, so the database's rollback undoes them.
   */
  savepointMark(): SavepointMark {
    const mark = new Map<string, number>();
    for (const [key, { kind, rows }] of this.held) if (kind.heldToCommit) mark.set(key, rows.length);
    return mark;
  }

  /** ROLLBACK TO SAVEPOINT for the rows held to commit: drops those held since `mark`. */
  rollBackTo(mark: SavepointMark): void {
    for (const [key, group] of this.held) {
      if (!group.kind.heldToCommit) continue;
      const kept = mark.get(key) ?? 0;
      if (kept === 0) this.held.delete(key);
      else group.rows.length = kept;
    }
  }

  /** Sends what is held, the kinds held to commit with the rest in one statement; the caller commits next. */
  async finish(): Promise<void> {
    this.flush(true);
    await this.after(Promise.resolve());
  }

  /**
   * Sends held kinds, synchronously, so they leave with what follows: every kind but those held
   * to commit as one statement, then (at the end) those held to commit as a second one, pipelined
   * behind it in the same round trip.
   *
   * Why two: a held write can wait out another transaction's row lock, and an append's position
   * must be drawn after that wait (docs/event-journal.md, "Causal order"). PostgreSQL draws it from
   * its statement's snapshot, which a statement takes when it starts: in one statement with the
   * writes, an append whose update then waited for a row that another transaction committed
   * sorted before that transaction's events. `npm run sim -- --store pg` caught it, a group join
   * journaled as PENDING after the task.running of a claim that had waited for the join
   * (test/events-journal.pg.test.ts stages it).
   */
  private flush(atCommit: boolean): void {
    const writes: WriteParts[] = [];
    const last: WriteParts[] = [];
    for (const [key, { kind, rows }] of this.held) {
      if (kind.heldToCommit && !atCommit) continue;
      (kind.heldToCommit ? last : writes).push(kind.statement(rows));
      this.held.delete(key);
    }
    this.identities.clear();
    for (const statement of [writes, last]) {
      if (statement.length === 0) continue;
      const { text, params } = combinedStatement(statement);
      this.flushed.push(this.inner.write(text, params));
    }
  }

  /** `next`'s answer, or the failure of a flushed write sent before it (the one that says what went wrong). */
  private async after<T>(next: Promise<T>): Promise<T> {
    const writes = this.flushed;
    this.flushed = [];
    const [settledWrites, answer] = await Promise.all([Promise.allSettled(writes), next.then((value) => ({ value }), (error: unknown) => ({ error }))]);
    for (const w of settledWrites) if (w.status === 'rejected') throw w.reason;
    if ('error' in answer) throw answer.error;
    return answer.value;
  }
}

/** A coalescible write: held by a transaction that coalesces, sent at once elsewhere (autocommit reads' writes, PGlite). */
export function coalescedWrite<Row>(q: SqlQueryable, kind: Coalescible<Row>, row: Row, identity?: string): Promise<void> {
  if (q instanceof CoalescingQueryable) return q.hold(kind, row, identity);
  const { text, params } = loneStatement(kind.statement([row]));
  return q.write(text, params);
}

/**
 * Several writes as one statement: each a data-modifying CTE on its own parameters (renumbered
 * after those before it), and the main SELECT runs the guard of each guarded one over the rows
 * its CTE returned. Every CTE runs to completion whatever the SELECT reads, and a guard that fails
 * fails the statement, and so the transaction, as the write alone would.
 */
export function combinedStatement(writes: readonly WriteParts[]): { text: string; params: SqlParam[] } {
  assert(writes.length > 0, 'a combined statement of no writes');
  if (writes.length === 1) return loneStatement(writes[0]!);
  const params: SqlParam[] = [];
  const ctes: string[] = [];
  const guards: string[] = [];
  writes.forEach((write, i) => {
    ctes.push(`w${i} AS (${renumbered(write.dml, params.length)})`);
    params.push(...write.params);
    if (write.check === undefined) return;
    params.push(write.check.rows, write.check.message);
    guards.push(`${write.check.guard}((SELECT count(*) FROM w${i}) = $${params.length - 1}, $${params.length})`);
  });
  return { text: `WITH ${ctes.join(', ')} SELECT ${guards.length === 0 ? '1' : guards.join(', ')}`, params };
}

/** `dml`'s placeholders $1..$n as $(1 + offset)..; the writes' texts are Baton's own and quote no `$`. */
function renumbered(dml: string, offset: number): string {
  assert(!(dml.match(/'[^']*'/g) ?? []).some((quoted) => quoted.includes('$')), `a coalesced write quotes a $: ${dml.slice(0, 80)}`);
  return offset === 0 ? dml : dml.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`);
}
