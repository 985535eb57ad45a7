import { assert, InvariantViolation, maxRacedAttempts, racedTooOften, type Store, type Tx } from '@baton/core';
import type { SqlDriver } from './driver';
import { CoalescingQueryable } from './coalesced-writes';
import { sqlRepositories } from './repositories/index';

/** Tables that fill from nothing to many thousands of rows in seconds: their plans go stale first. */
/**
 * The tables every job writes to and every request reads by key: a plan made while one was
 * small (a sequential scan of the idempotency keys, seen in test/hot-plans.pg.test.ts) costs
 * O(rows) per request until its statistics catch up.
 */
const queueTables = ['messages', 'tasks', 'events', 'idempotency_keys'];
/**
 * PGlite's VACUUM of messages comes after this many store transactions: a job takes about three
 * (submit, admit, complete), so the claimed prefix stays under about 7,000 rows, about 55 index
 * pages (PostgreSQL's autovacuum keeps it under 2,500: migration 031). Less often than there
 * because each VACUUM holds PGlite's one connection.
 */
const defaultVacuumEveryTransactions = 20_000;

/** Tries of one transaction refused for lock conflicts before the conflict is the caller's error. */
const maxTransactionAttempts = 30;

/** lock_not_available (NOWAIT), deadlock_detected, serialization_failure: nothing was written, trying again is safe. */
const transientConflicts = new Set(['55P03', '40P01', '40001']);

function isTransientConflict(error: unknown): boolean {
  return typeof error === 'object' && error !== null && transientConflicts.has(String((error as { code?: unknown }).code));
}

/** A pipelined write's guard (baton_assert, migration 010) failed: a bug, as a failed assert() is. */
const isFailedGuard = (error: unknown): boolean => typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'BT000';

/** A speculative write's race check failed (baton_won, migration 013): run the transaction again (core/src/store/raced.ts). */
const isLostRace = (error: unknown): boolean => typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'BT001';

// A backoff pause between transaction attempts: I/O pacing, not domain time, so not the injected clock.
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The Store over PostgreSQL or PGlite: the same repositories and SQL on both, only the driver
 * differs. Transactions run at READ COMMITTED; the repositories take the row and advisory
 * locks that the operations' correctness relies on (SELECT ... FOR UPDATE in lock order).
 */
export class SqlStore implements Store {
  readonly kind: 'postgres' | 'pglite';
  /** Transactions run again after a transient lock conflict, since start: how often contention bites. */
  retriedTransactions = 0;
  /** Transactions run again after losing a race at a speculative write (core/src/store/raced.ts). */
  racedTransactions = 0;
  /** Transactions begun since maintain() last vacuumed messages (PGlite only: it has no autovacuum). */
  private transactionsSinceVacuum = 0;

  /** `vacuumEveryTransactions`: PGlite's vacuum cadence (vacuumMessagesOnPglite); tests make it short. */
  constructor(
    readonly driver: SqlDriver,
    private readonly vacuumEveryTransactions = defaultVacuumEveryTransactions,
  ) {
    this.kind = driver.kind;
  }

  /**
   * Runs `work` in a transaction, and again from the start when PostgreSQL refused it for a
   * passing lock conflict: a NOWAIT lock that was busy (a group's decision reaching for a member
   * another transaction holds, docs/lock-order.md), or a deadlock it broke. The rollback has
   * released everything, so the retry waits its turn behind whoever held the lock; a short,
   * growing, jittered pause keeps retries from spinning against a transaction still running.
   */
  async transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    this.transactionsSinceVacuum += 1;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.driver.transaction(async (q) => {
          const coalescing = new CoalescingQueryable(q);
          const result = await work(sqlRepositories(coalescing));
          await coalescing.finish();
          return result;
        });
      } catch (error) {
        if (isFailedGuard(error)) throw new InvariantViolation((error as Error).message);
        if (isLostRace(error)) {
          if (attempt >= maxRacedAttempts) throw racedTooOften(error as Error);
          this.racedTransactions += 1;
          continue;
        }
        if (!isTransientConflict(error)) throw error;
        // Still refused after every try: contention the client can wait out, not a bug (a 409, not a 500).
        if (attempt >= maxTransactionAttempts) throw racedTooOften(error as Error);
        this.retriedTransactions += 1;
        await pause(Math.random() * Math.min(50, 2 ** attempt));
      }
    }
  }

  /** Each statement runs on its own (autocommit) and sees what was committed when it started. */
  read<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return work(sqlRepositories(this.driver));
  }

  /**
   * Keeps the hot tables' plans and the head of the READY line in shape: on PostgreSQL,
   * ANALYZE of a queue table that outgrew its statistics (analyzeOutgrown); on PGlite, which runs
   * no autovacuum, a VACUUM of messages now and then (vacuumMessagesOnPglite).
   */
  async maintain(): Promise<void> {
    if (this.kind === 'postgres') await this.analyzeOutgrown();
    else await this.vacuumMessagesOnPglite();
  }

  /**
   * ANALYZE of each hot table (queueTables) that has more than doubled (plus 500 rows) since its last
   * statistics. Why: every statement is prepared (pg-driver.ts), and a prepared statement keeps
   * the plan it was given until the table's statistics change. Plans made while a table was
   * empty stay on it as it fills: in a drain, the task-key lookup of every submit read the whole
   * table (8,000 buffers, 2.4 ms at 12,000 tasks; pg_stat_statements) until autovacuum, which
   * looks once a minute, analyzed it. A queue that only turns over (rows change state, the count
   * stays) is left alone: no plan depends on the share of READY rows (migration 012, and no index
   * of all live rows to sort, migration 029). The check is one read of PostgreSQL's counters.
   */
  private async analyzeOutgrown(): Promise<void> {
    const stale = await this.driver.query<{ relname: string }>(
      `SELECT s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
       WHERE s.schemaname = current_schema() AND s.relname = ANY($1::text[]) AND s.n_live_tup > 500 + 2 * greatest(c.reltuples, 0)`,
      [queueTables],
    );
    for (const { relname } of stale) {
      assert(queueTables.includes(relname), `maintain: ${relname} is not a queue table`);
      await this.driver.exec(`ANALYZE ${relname}`);
    }
  }

  /**
   * PGlite runs no autovacuum, so without this the claimed prefix of the READY indexes
   * (migration 031) would only grow: every claim reads the index pages of every row claimed
   * since the database was made. PGlite keeps no table counters to tell dead rows by, so the
   * store's own transactions are the measure: a VACUUM with its index pass (INDEX_CLEANUP ON,
   * the pass that removes the prefix) after every vacuumEveryTransactions of them. It holds PGlite's one
   * connection while it runs, which is why it is not more often.
   */
  private async vacuumMessagesOnPglite(): Promise<void> {
    if (this.transactionsSinceVacuum < this.vacuumEveryTransactions) return;
    this.transactionsSinceVacuum = 0;
    await this.driver.exec('VACUUM (INDEX_CLEANUP ON) messages');
  }

  close(): Promise<void> {
    return this.driver.close();
  }
}
