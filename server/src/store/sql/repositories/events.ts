import { validationFailed, type EventRepository, type JournalEvent, type NewEvent } from '@baton/core';
import { fromJson, jsonParam, timeParam, toBigint, toInt, toMs, toText, toTextOrNull } from '../codec';
import type { SqlParam, SqlQueryable } from '../driver';
import { coalescedWrite, type Coalescible } from '../coalesced-writes';
import type { WriteParts } from './guarded-write';

/**
 * The event journal (docs/event-journal.md).
 *
 * An event's position is (tx, event_id). `tx` is drawn as the event is inserted, at least one
 * above the inserting transaction's own xid and never below the next xid not yet assigned
 * (migration 015); event_id comes from a sequence in the same insert, which a transaction sends
 * last, just before its COMMIT (coalesced-writes.ts, heldToCommit).
 *
 * Readers only return events with `tx <= pg_snapshot_xmin(pg_current_snapshot())`: every
 * transaction that can still commit an event has an xid at or above that horizon, so each of its
 * events has a tx above it and sorts after everything returned. A reader that follows the last
 * position skips nothing, whatever order transactions commit in.
 *
 * The order is causal: a transaction that saw another's commit (read its rows, or waited on its
 * lock) appends after that commit, so its positions are drawn later and sort after the other's.
 * The writer's own xid would not do: it is taken at the first write, and a transaction that
 * locked a row early can read what a younger transaction committed since (test/events-journal.pg.test.ts).
 *
 * The public eventId is the position as one decimal number, tx * 10^19 + event_id (event_id is
 * a bigint, below 2^63 < 10^19), so it still increases in the order readers see events.
 */

const positionBase = 10n ** 19n;

export function encodePosition(tx: bigint, eventId: bigint): string {
  return (tx * positionBase + eventId).toString();
}

export function decodePosition(position: string): { tx: string; eventId: string } {
  if (!/^\d{1,40}$/.test(position)) throw validationFailed('cursor', 'not a cursor this journal returned');
  const value = BigInt(position);
  return { tx: (value / positionBase).toString(), eventId: (value % positionBase).toString() };
}

interface EventRow {
  space_id: unknown;
  xid: unknown;
  event_id: unknown;
  type: unknown;
  aggregate_type: unknown;
  aggregate_id: unknown;
  scope_id: unknown;
  data: unknown;
  occurred_at: unknown;
}

// xid8 comes back as text. Not aliased `tx`: ORDER BY tx would then sort by the text.
const columns = 'space_id, tx::text AS xid, event_id, type, aggregate_type, aggregate_id, scope_id, data, occurred_at';

function toEvent(row: EventRow, eventId: string): JournalEvent {
  return {
    eventId,
    spaceId: toText(row.space_id),
    type: toText(row.type),
    aggregateType: toText(row.aggregate_type),
    aggregateId: toText(row.aggregate_id),
    scopeId: toTextOrNull(row.scope_id),
    data: fromJson<Record<string, unknown>>(row.data),
    occurredAt: toMs(row.occurred_at),
  };
}

const positionOf = (row: EventRow): string => encodePosition(toBigint(row.xid), toBigint(row.event_id));

/**
 * How a reader pages through the journal. Only 'horizon' is correct and used by the store; the
 * other exists so tests can show what the guard prevents and the benchmark what it costs.
 * - horizon:    (tx, event_id) order, behind the transaction horizon; cursor = position.
 * - unguarded:  event_id order, no horizon; cursor = event_id. Skips whenever transactions
 *               commit out of event_id order.
 */
export type JournalReadMode = 'horizon' | 'unguarded';

/** The store's read: $1 space, $2 and $3 the position after which to start, $4 the limit. */
export const listAfterSql = `SELECT ${columns} FROM events
  WHERE space_id = $1 AND (tx, event_id) > ($2::xid8, $3::bigint) AND tx <= pg_snapshot_xmin(pg_current_snapshot())
  ORDER BY tx, event_id LIMIT $4`;

export async function readJournal(q: SqlQueryable, spaceId: string, after: string, limit: number, mode: JournalReadMode): Promise<JournalEvent[]> {
  if (mode === 'horizon') {
    const { tx, eventId } = decodePosition(after);
    const rows = await q.query<EventRow>(listAfterSql, [spaceId, tx, eventId, limit]);
    return rows.map((row) => toEvent(row, positionOf(row)));
  }
  const rows = await q.query<EventRow>(
    `SELECT ${columns} FROM events WHERE space_id = $1 AND event_id > $2::bigint ORDER BY event_id LIMIT $3`,
    [spaceId, after, limit],
  );
  return rows.map((row) => toEvent(row, toBigint(row.event_id).toString()));
}

/**
 * How many committed events of a space a horizon read does not return yet: those written by
 * transactions younger than the oldest one still open anywhere on the PostgreSQL server
 * (docs/event-journal.md, "The caveat"). For a checker that must read the whole journal once its
 * own writers are done, such as the simulator's final checks; no request path reads it.
 */
export async function countBehindHorizon(q: SqlQueryable, spaceId: string): Promise<number> {
  const [row] = await q.query<{ behind: number }>(
    `SELECT count(*)::int AS behind FROM events WHERE space_id = $1 AND tx > pg_snapshot_xmin(pg_current_snapshot())`,
    [spaceId],
  );
  return row!.behind;
}

/** The events of one append: the rows of one insert, in order. */
interface Appended {
  spaceId: string;
  occurredAt: number;
  events: readonly NewEvent[];
}

/**
 * Appends as one statement (coalesced-writes.ts): the events of every append held, in append
 * order. One append is one multi-row INSERT, whose VALUES rows take event_id in the order given;
 * several are one INSERT ... SELECT from unnest WITH ORDINALITY, ordered, so they do too, and
 * one statement text serves any number of rows.
 */
const appendEvents: Coalescible<Appended> = {
  key: 'events.append',
  heldToCommit: true,
  statement(appends) {
    if (appends.length === 1) return appendStatement(appends[0]!);
    const columns: SqlParam[][] = [[], [], [], [], [], [], []];
    for (const { spaceId, occurredAt, events } of appends) {
      for (const e of events) {
        const row = [spaceId, e.type, e.aggregateType, e.aggregateId, e.scopeId, jsonParam(e.data), timeParam(occurredAt)];
        row.forEach((value, i) => columns[i]!.push(value));
      }
    }
    return {
      dml: `INSERT INTO events (space_id, type, aggregate_type, aggregate_id, scope_id, data, occurred_at)
             SELECT space_id, type, aggregate_type, aggregate_id, scope_id, data::jsonb, occurred_at
             FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[])
               WITH ORDINALITY AS e(space_id, type, aggregate_type, aggregate_id, scope_id, data, occurred_at, n)
             ORDER BY n`,
      params: columns as SqlParam[],
    };
  },
};

/** One multi-row INSERT; VALUES rows take event_id in the order the events were given. */
function appendStatement({ spaceId, occurredAt, events }: Appended): WriteParts {
  const params: SqlParam[] = [spaceId, timeParam(occurredAt)];
  const rows = events.map((e) => {
    const at = params.length;
    params.push(e.type, e.aggregateType, e.aggregateId, e.scopeId, jsonParam(e.data));
    return `($1, $${at + 1}, $${at + 2}, $${at + 3}, $${at + 4}, $${at + 5}::jsonb, $2)`;
  });
  return {
    dml: `INSERT INTO events (space_id, type, aggregate_type, aggregate_id, scope_id, data, occurred_at) VALUES ${rows.join(', ')}`,
    params,
  };
}

export function sqlEvents(q: SqlQueryable): EventRepository {
  return {
    async append(spaceId, occurredAt, events) {
      if (events.length === 0) return;
      await coalescedWrite(q, appendEvents, { spaceId, occurredAt, events });
    },
    listAfter: (spaceId, afterEventId, limit) => readJournal(q, spaceId, afterEventId, limit, 'horizon'),
    async tail(spaceId) {
      // Behind the same horizon as listAfter: an event still able to commit sorts after it.
      const [row] = await q.query<{ xid: unknown; event_id: unknown }>(
        `SELECT tx::text AS xid, event_id FROM events WHERE space_id = $1 AND tx <= pg_snapshot_xmin(pg_current_snapshot())
         ORDER BY tx DESC, event_id DESC LIMIT 1`,
        [spaceId],
      );
      return row ? encodePosition(toBigint(row.xid), toBigint(row.event_id)) : '0';
    },
    async purgeBefore(cutoffs, limit) {
      if (cutoffs.length === 0) return 0;
      // No index of its own: each space's oldest events lead its primary key (space_id, tx,
      // event_id), so the sweep walks from the journal's start and deletes a prefix of it. A
      // space is visited only when its first event is due (one index probe), and then at most
      // `limit` rows are read, so a space with nothing due costs one probe, never a scan of its
      // journal. journal_starts is raised to the newest position deleted, in the same statement.
      const [row] = await q.query<{ n: unknown }>(
        `WITH due AS (
           SELECT d.space_id, d.tx, d.event_id FROM unnest($1::text[], $2::timestamptz[]) AS c(space_id, cutoff)
           CROSS JOIN LATERAL (
             SELECT space_id, tx, event_id, occurred_at FROM events WHERE space_id = c.space_id
             ORDER BY tx, event_id LIMIT $3 FOR UPDATE SKIP LOCKED) d
           WHERE (SELECT h.occurred_at FROM events h WHERE h.space_id = c.space_id ORDER BY h.tx, h.event_id LIMIT 1) <= c.cutoff
             AND d.occurred_at <= c.cutoff
           LIMIT $3
         ), gone AS (
           DELETE FROM events e USING due WHERE e.space_id = due.space_id AND e.tx = due.tx AND e.event_id = due.event_id
           RETURNING e.space_id, e.tx, e.event_id
         ), marked AS (
           INSERT INTO journal_starts (space_id, purged_through_tx, purged_through_event_id)
           SELECT DISTINCT ON (space_id) space_id, tx, event_id FROM gone ORDER BY space_id, tx DESC, event_id DESC
           ON CONFLICT (space_id) DO UPDATE
             SET purged_through_tx = EXCLUDED.purged_through_tx, purged_through_event_id = EXCLUDED.purged_through_event_id
             WHERE (EXCLUDED.purged_through_tx, EXCLUDED.purged_through_event_id) > (journal_starts.purged_through_tx, journal_starts.purged_through_event_id)
           RETURNING 1
         )
         SELECT count(*) AS n FROM gone`,
        [cutoffs.map((c) => c.spaceId), cutoffs.map((c) => timeParam(c.cutoffMs)), limit],
      );
      return toInt(row?.n);
    },
    async purgedThrough(spaceId) {
      const [row] = await q.query<{ xid: unknown; event_id: unknown }>(
        'SELECT purged_through_tx::text AS xid, purged_through_event_id AS event_id FROM journal_starts WHERE space_id = $1',
        [spaceId],
      );
      return row ? encodePosition(toBigint(row.xid), toBigint(row.event_id)) : '0';
    },
  };
}
