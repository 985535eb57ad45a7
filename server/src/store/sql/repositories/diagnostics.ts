import type { CensusResourceType, DeliverySummary, DiagnosticsRepository, Message, RunResourceType, StateCount, TaskState, TaskSummary } from '@baton/core';
import { fromJson, timeParam, toInt, toMs, toMsOrNull, toText, toTextOrNull } from '../codec';
import type { SqlQueryable } from '../driver';

/**
 * The diagnostics reads (docs/design/0018-diagnostics.md; core/src/diagnostics). Each statement is bounded: a count
 * reads at most `cap` rows of its table (a LIMIT inside the count), a list at most `limit`, and
 * each names the index it walks. None takes a lock; each runs as one statement of its own
 * (Store.read), so a view is not one snapshot across its statements: good enough for an
 * operator's look, and no long transaction holds the journal horizon back.
 */

/**
 * The census's tables, each counted over a range of an index led by space_id (the primary key
 * (space_id, id), or another the planner prefers, such as tasks_by_scope), at most `cap` rows
 * per table (LIMIT before the count). The LIMIT is what bounds it: a space with 10 million
 * ACKED messages costs `cap` rows of messages, not 10 million.
 */
const censusTables: readonly { type: CensusResourceType; table: string; stateful: boolean }[] = [
  { type: 'budgets', table: 'budgets', stateful: false },
  { type: 'reservations', table: 'reservations', stateful: true },
  { type: 'barriers', table: 'barriers', stateful: true },
  { type: 'pools', table: 'pools', stateful: false },
  { type: 'workLimits', table: 'work_limits', stateful: false },
  { type: 'allowances', table: 'allowances', stateful: false },
  { type: 'allowanceWaiters', table: 'allowance_waiters', stateful: true },
  { type: 'mailboxes', table: 'mailboxes', stateful: false },
  { type: 'messages', table: 'messages', stateful: true },
  { type: 'tasks', table: 'tasks', stateful: true },
  { type: 'taskGroups', table: 'task_groups', stateful: true },
  { type: 'destinations', table: 'webhook_destinations', stateful: true },
];

const censusSql = censusTables
  .map(({ type, table, stateful }) =>
    stateful
      ? `SELECT '${type}' AS type, state, count(*) AS n FROM (SELECT state FROM ${table} WHERE space_id = $1 LIMIT $2) t GROUP BY state`
      : `SELECT '${type}' AS type, NULL::text AS state, count(*) AS n FROM (SELECT 1 FROM ${table} WHERE space_id = $1 LIMIT $2) t`,
  )
  .join('\nUNION ALL\n');

/**
 * Under one scopeId: its tasks through tasks_by_scope (space_id, scope_id, ...), the groups
 * created under it through task_groups_by_parent_scope, its reservations through
 * reservations_by_scope (migration 022); each at most `cap` rows. Claims and timers (see
 * docs/design/0020-claims.md, docs/design/0021-timers.md) add their branch here when they land.
 */
const runCountsSql = `
  SELECT 'tasks' AS type, state, count(*) AS n FROM (SELECT state FROM tasks WHERE space_id = $1 AND scope_id = $2 LIMIT $3) t GROUP BY state
  UNION ALL
  SELECT 'taskGroups' AS type, state, count(*) AS n FROM (SELECT state FROM task_groups WHERE space_id = $1 AND parent_scope_id = $2 LIMIT $3) t GROUP BY state
  UNION ALL
  SELECT 'reservations' AS type, state, count(*) AS n FROM (SELECT state FROM reservations WHERE space_id = $1 AND scope_id = $2 LIMIT $3) t GROUP BY state
  UNION ALL
  SELECT 'timers' AS type, state, count(*) AS n FROM (SELECT state FROM timers WHERE space_id = $1 AND scope_id = $2 LIMIT $3) t GROUP BY state
  UNION ALL
  SELECT 'claims' AS type, state, count(*) AS n FROM (SELECT state FROM claims WHERE space_id = $1 AND scope_id = $2 LIMIT $3) t GROUP BY state`;

const deliveryColumns = 'id, task_id, mailbox_id, scope_id, state, attempt, requirements, holder, holder_session, lease_expires_at, created_at';
const taskColumns = 'id, task_key, state, mailbox_id, scope_id, message_id, created_at';

type Row = Record<string, unknown>;

const toCounts = <T extends string>(rows: Row[]): StateCount<T>[] =>
  rows.map((r) => ({ type: toText(r.type) as T, state: toTextOrNull(r.state), count: toInt(r.n) })).filter((c) => c.count > 0);

const toDelivery = (r: Row): DeliverySummary => ({
  messageId: toText(r.id),
  taskId: toTextOrNull(r.task_id),
  mailboxId: toText(r.mailbox_id),
  scopeId: toText(r.scope_id),
  state: toText(r.state) as Message['state'],
  attempt: toInt(r.attempt),
  requirements: (fromJson(r.requirements) ?? null) as DeliverySummary['requirements'],
  holder: toTextOrNull(r.holder),
  holderSession: toTextOrNull(r.holder_session),
  leaseExpiresAt: toMsOrNull(r.lease_expires_at),
  createdAt: toMs(r.created_at),
});

const toTaskSummary = (r: Row): TaskSummary => ({
  id: toText(r.id),
  taskKey: toText(r.task_key),
  state: toText(r.state) as TaskState,
  mailboxId: toText(r.mailbox_id),
  scopeId: toText(r.scope_id),
  messageId: toTextOrNull(r.message_id),
  createdAt: toMs(r.created_at),
});

export function sqlDiagnostics(q: SqlQueryable): DiagnosticsRepository {
  return {
    async census(spaceId, cap) {
      return toCounts<CensusResourceType>(await q.query<Row>(censusSql, [spaceId, cap]));
    },

    async backlog(spaceId, afterName, limit, cap) {
      // A page of mailboxes in name order (mailboxes_name_unique), with the counts of
      // message_counts (migration 028: a few rows per mailbox, whatever the backlog) capped at
      // `cap` as the interface asks, and the oldest READY: min(created_at) of the mailbox's READY
      // rows over messages_ready, at most `cap` of them. No index orders a mailbox's READY rows
      // across scopes, and they are few (the backlog), so this reads no ACKED history. The
      // position is in the SQL only when there is one: `$2 IS NULL OR name > $2` would hide the
      // range from the planner, which would then sort every mailbox of the space.
      const after = afterName === null ? '' : 'AND mb.name > $4::text';
      const rows = await q.query<Row>(
        `SELECT mb.id, mb.name, least(c.live - c.claimed, $3) AS ready, least(c.claimed, $3) AS claimed, least(c.dead, $3) AS dead,
           (SELECT min(l.created_at) FROM (SELECT m.created_at FROM messages m WHERE m.space_id = mb.space_id AND m.mailbox_id = mb.id AND m.state = 'READY' LIMIT $3) l) AS oldest_ready_at
         FROM mailboxes mb
         CROSS JOIN LATERAL (
           SELECT coalesce(sum(live), 0) AS live, coalesce(sum(claimed), 0) AS claimed, coalesce(sum(dead), 0) AS dead
           FROM message_counts WHERE space_id = mb.space_id AND mailbox_id = mb.id
         ) c
         WHERE mb.space_id = $1 ${after}
         ORDER BY mb.name LIMIT $2`,
        afterName === null ? [spaceId, limit, cap] : [spaceId, limit, cap, afterName],
      );
      return rows.map((r) => ({
        spaceId,
        mailboxId: toText(r.id),
        mailboxName: toText(r.name),
        ready: toInt(r.ready),
        claimed: toInt(r.claimed),
        dead: toInt(r.dead),
        oldestReadyAt: toMsOrNull(r.oldest_ready_at),
      }));
    },

    async waitLines(spaceId, cap) {
      // allowance_waiters_line (space_id, allowance_id, position) WHERE state = 'WAITING', read in
      // its order and at most `cap` rows: each line read has its head (the oldest waiter) first.
      const rows = await q.query<Row>(
        `WITH waiting AS (
           SELECT allowance_id, created_at FROM allowance_waiters WHERE space_id = $1 AND state = 'WAITING' ORDER BY allowance_id, position LIMIT $2
         )
         SELECT w.allowance_id, a.name, count(*) AS waiting, min(w.created_at) AS oldest_waiting_at
         FROM waiting w JOIN allowances a ON a.space_id = $1 AND a.id = w.allowance_id
         GROUP BY w.allowance_id, a.name`,
        [spaceId, cap],
      );
      return rows.map((r) => ({ spaceId, allowanceId: toText(r.allowance_id), allowanceName: toText(r.name), waiting: toInt(r.waiting), oldestWaitingAt: toMs(r.oldest_waiting_at) }));
    },

    async waitingBarriers(spaceId, limit, arrivalLimit) {
      // barriers_waiting (migration 022) for the WAITING barriers oldest first; each one's
      // arrivals of its epoch from the barrier_arrivals primary key (a prefix of it), in key order.
      const rows = await q.query<Row>(
        `SELECT b.id, b.scope_id, b.epoch, b.target, b.arrivals, b.created_at,
                ARRAY(SELECT a.arrival_key FROM barrier_arrivals a
                      WHERE a.space_id = b.space_id AND a.barrier_id = b.id AND a.epoch = b.epoch ORDER BY a.arrival_key LIMIT $3) AS arrival_keys
         FROM barriers b WHERE b.space_id = $1 AND b.state = 'WAITING' ORDER BY b.created_at, b.id LIMIT $2`,
        [spaceId, limit, arrivalLimit],
      );
      return rows.map((r) => ({
        id: toText(r.id),
        scopeId: toText(r.scope_id),
        epoch: toInt(r.epoch),
        target: toInt(r.target),
        arrivals: toInt(r.arrivals),
        arrivalKeys: (r.arrival_keys as unknown[]).map(toText),
        createdAt: toMs(r.created_at),
      }));
    },

    async gatedDeliveries(spaceId, limit) {
      // messages_ready_gated (migration 022): the READY deliveries with requirements, in send order.
      const rows = await q.query<Row>(
        `SELECT ${deliveryColumns} FROM messages WHERE space_id = $1 AND state = 'READY' AND requirements IS NOT NULL ORDER BY seq LIMIT $2`,
        [spaceId, limit],
      );
      return rows.map(toDelivery);
    },

    async deliveries(spaceId, messageIds) {
      if (messageIds.length === 0) return [];
      // The messages primary key; at most a page of ids.
      const rows = await q.query<Row>(`SELECT ${deliveryColumns} FROM messages WHERE space_id = $1 AND id = ANY($2::text[])`, [spaceId, [...messageIds]]);
      return rows.map(toDelivery);
    },

    async taskSummaries(spaceId, ids) {
      if (ids.length === 0) return [];
      // The tasks primary key; at most a page of ids.
      const rows = await q.query<Row>(`SELECT ${taskColumns} FROM tasks WHERE space_id = $1 AND id = ANY($2::text[])`, [spaceId, [...ids]]);
      return rows.map(toTaskSummary);
    },

    async scopeTasks(spaceId, scopeId, after, limit) {
      // tasks_by_scope (space_id, scope_id, created_at, id): one range scan from the position.
      const rows =
        after === null
          ? await q.query<Row>(`SELECT ${taskColumns} FROM tasks WHERE space_id = $1 AND scope_id = $2 ORDER BY created_at, id LIMIT $3`, [spaceId, scopeId, limit])
          : await q.query<Row>(
              `SELECT ${taskColumns} FROM tasks WHERE space_id = $1 AND scope_id = $2 AND (created_at, id) > ($3::timestamptz, $4) ORDER BY created_at, id LIMIT $5`,
              [spaceId, scopeId, timeParam(after.createdAt), after.id, limit],
            );
      return rows.map(toTaskSummary);
    },

    async allowancesWithWaiters(spaceId, allowanceIds) {
      if (allowanceIds.length === 0) return [];
      // One probe of allowance_waiters_line per allowance (EXISTS stops at the first row).
      const rows = await q.query<Row>(
        `SELECT a.id FROM unnest($2::text[]) AS a(id)
         WHERE EXISTS (SELECT 1 FROM allowance_waiters w WHERE w.space_id = $1 AND w.allowance_id = a.id AND w.state = 'WAITING')`,
        [spaceId, [...new Set(allowanceIds)]],
      );
      return rows.map((r) => toText(r.id));
    },

    async runCounts(spaceId, scopeId, cap) {
      return toCounts<RunResourceType>(await q.query<Row>(runCountsSql, [spaceId, scopeId, cap]));
    },
  };
}
