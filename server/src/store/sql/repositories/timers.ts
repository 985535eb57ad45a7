import type { Timer, TimerRepository, TimerState } from '@baton/core';
import { fromJson, jsonParam, timeParam, timeParamOrNull, toInt, toMs, toMsOrNull, toText, toTextOrNull } from '../codec';
import type { SqlParam, SqlQueryable } from '../driver';
import { writeOne } from './guarded-write';
import { lockClause } from './lock-clause';

interface Row {
  space_id: unknown;
  id: unknown;
  timer_key: unknown;
  scope_id: unknown;
  mailbox_id: unknown;
  payload: unknown;
  fingerprint: unknown;
  fire_at: unknown;
  due_at: unknown;
  state: unknown;
  fired_at: unknown;
  fired_message_id: unknown;
  cancelled_at: unknown;
  created_at: unknown;
  updated_at: unknown;
}

const columns = 'space_id, id, timer_key, scope_id, mailbox_id, payload, fingerprint, fire_at, due_at, state, fired_at, fired_message_id, cancelled_at, created_at, updated_at';

function toTimer(r: Row): Timer {
  return {
    spaceId: toText(r.space_id),
    id: toText(r.id),
    timerKey: toText(r.timer_key),
    scopeId: toText(r.scope_id),
    mailboxId: toText(r.mailbox_id),
    payload: fromJson(r.payload),
    fingerprint: toText(r.fingerprint),
    fireAt: toMs(r.fire_at),
    dueAt: toMs(r.due_at),
    state: toText(r.state) as TimerState,
    firedAt: toMsOrNull(r.fired_at),
    firedMessageId: toTextOrNull(r.fired_message_id),
    cancelledAt: toMsOrNull(r.cancelled_at),
    createdAt: toMs(r.created_at),
    updatedAt: toMs(r.updated_at),
  };
}

/** Parameters $1..$15 in `columns` order. */
function params(t: Timer): SqlParam[] {
  return [
    t.spaceId, t.id, t.timerKey, t.scopeId, t.mailboxId, jsonParam(t.payload), t.fingerprint, timeParam(t.fireAt), timeParam(t.dueAt), t.state,
    timeParamOrNull(t.firedAt), t.firedMessageId, timeParamOrNull(t.cancelledAt), timeParam(t.createdAt), timeParam(t.updatedAt),
  ];
}

export function sqlTimers(q: SqlQueryable): TimerRepository {
  return {
    async insert(timer) {
      // DO NOTHING on the timerKey: a concurrent arm of the key that committed first wins, and
      // this one answers as a repeat (service.ts arm).
      const rows = await q.query(
        `INSERT INTO timers (${columns}) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10, $11, $12, $13, $14, $15)
         ON CONFLICT (space_id, timer_key) DO NOTHING RETURNING 1`,
        params(timer),
      );
      return rows.length === 1;
    },
    async get(spaceId, id, options) {
      const [row] = await q.query<Row>(`SELECT ${columns} FROM timers WHERE space_id = $1 AND id = $2${lockClause(options)}`, [spaceId, id]);
      return row && toTimer(row);
    },
    async getByKey(spaceId, timerKey) {
      const [row] = await q.query<Row>(`SELECT ${columns} FROM timers WHERE space_id = $1 AND timer_key = $2`, [spaceId, timerKey]);
      return row && toTimer(row);
    },
    async list(spaceId, filter, after, limit) {
      // Filters are parameters either way (NULL: no filter); the position is a row comparison,
      // so each page is one range scan of timers_by_created.
      const states = filter.states === null ? null : [...filter.states];
      const filters = `space_id = $1 AND ($2::text[] IS NULL OR state = ANY($2::text[])) AND ($3::text IS NULL OR scope_id = $3)`;
      const rows =
        after === null
          ? await q.query<Row>(`SELECT ${columns} FROM timers WHERE ${filters} ORDER BY created_at, id LIMIT $4`, [spaceId, states, filter.scopeId, limit])
          : await q.query<Row>(`SELECT ${columns} FROM timers WHERE ${filters} AND (created_at, id) > ($4::timestamptz, $5) ORDER BY created_at, id LIMIT $6`, [
              spaceId, states, filter.scopeId, timeParam(after.createdAt), after.id, limit,
            ]);
      return rows.map(toTimer);
    },
    async update(timer) {
      // Only the moving columns are written, and only on an ARMED row (FIRED and CANCELLED are
      // final): baton_assert fails the transaction when the row is missing or no longer ARMED,
      // so no timer leaves ARMED twice, whatever the caller believed it had read.
      await writeOne(
        q,
        `UPDATE timers SET due_at = $3, state = $4, fired_at = $5, fired_message_id = $6, cancelled_at = $7, updated_at = $8
         WHERE space_id = $1 AND id = $2 AND state = 'ARMED' RETURNING 1`,
        [timer.spaceId, timer.id, timeParam(timer.dueAt), timer.state, timeParamOrNull(timer.firedAt), timer.firedMessageId, timeParamOrNull(timer.cancelledAt), timeParam(timer.updatedAt)],
        `update of timer ${timer.id}: missing or no longer ARMED`,
      );
    },
    async countArmed(spaceId, cap) {
      // The LIMIT stops the scan of timers_armed at the cap: a full space costs a count up to its limit.
      const [row] = await q.query<{ n: unknown }>(`SELECT count(*) AS n FROM (SELECT 1 FROM timers WHERE space_id = $1 AND state = 'ARMED' LIMIT $2) a`, [spaceId, cap]);
      return toInt(row?.n ?? 0);
    },
    async countByState(spaceId, scopeId) {
      const rows = await q.query<{ state: unknown; n: unknown }>(`SELECT state, count(*) AS n FROM timers WHERE space_id = $1 AND scope_id = $2 GROUP BY state`, [spaceId, scopeId]);
      return rows.map((r) => ({ state: toText(r.state) as TimerState, count: toInt(r.n) }));
    },
    async claimDue(nowMs, limit) {
      // SKIP LOCKED: a row another server's sweep (or a cancel) holds is passed over. A row
      // whose lock is granted only after another sweep committed is re-checked against the
      // WHERE: FIRED (or pushed later) by then, it is not taken. Served by timers_due.
      const rows = await q.query<Row>(
        `SELECT ${columns} FROM timers WHERE state = 'ARMED' AND due_at <= $1 ORDER BY due_at, space_id, id LIMIT $2 FOR UPDATE SKIP LOCKED`,
        [timeParam(nowMs), limit],
      );
      return rows.map(toTimer);
    },
    async lockArmedInScopes(spaceId, scopeIds, limit) {
      // FOR UPDATE without SKIP LOCKED: a cancel of a scope waits for a sweep holding one of its
      // timers, then re-checks it (FIRED by then: not taken). Id order is the lock order.
      const rows = await q.query<Row>(
        `SELECT ${columns} FROM timers WHERE space_id = $1 AND state = 'ARMED' AND scope_id = ANY($2::text[]) ORDER BY id LIMIT $3 FOR UPDATE`,
        [spaceId, [...scopeIds], limit],
      );
      return rows.map(toTimer);
    },
  };
}
