import { assert, assertTask, terminalTaskStates, type JournalEvent, type Task, type TaskRepository, type TaskSubscriber } from '@baton/core';
import { lockClause } from './lock-clause';
import { fromJson, jsonParam, timeParam, timeParamOrNull, toBigint, toInt, toMs, toMsOrNull, toText, toTextOrNull } from '../codec';
import type { SqlParam, SqlQueryable } from '../driver';
import { unnestColumns } from './guarded-write';
import { coalescedWrite, type Coalescible } from '../coalesced-writes';
import { encodePosition } from './events';

type Row = Record<string, unknown>;

/** What an insert writes; `tombstoned` is left to its default (false): only retention sets it. */
const insertColumns =
  'space_id, id, task_key, fingerprint, mailbox_id, scope_id, state, input, requirements, work_limit, deadline, attempts, outcome, failure_reason, message_id, created_at, updated_at, group_id';
export const taskColumns = `${insertColumns}, tombstoned`;

export function toTask(r: Row): Task {
  const t: Task = {
    spaceId: toText(r.space_id),
    id: toText(r.id),
    taskKey: toText(r.task_key),
    fingerprint: toText(r.fingerprint),
    mailboxId: toText(r.mailbox_id),
    scopeId: toText(r.scope_id),
    state: toText(r.state) as Task['state'],
    input: fromJson(r.input),
    requirements: fromJson<Task['requirements']>(r.requirements),
    workLimit: toTextOrNull(r.work_limit),
    deadline: toMsOrNull(r.deadline),
    attempts: toInt(r.attempts),
    outcome: fromJson(r.outcome),
    failureReason: toTextOrNull(r.failure_reason),
    messageId: toTextOrNull(r.message_id),
    groupId: toTextOrNull(r.group_id),
    tombstoned: r.tombstoned === true,
    createdAt: toMs(r.created_at),
    updatedAt: toMs(r.updated_at),
  };
  assertTask(t);
  return t;
}

const toSubscriber = (r: Row): TaskSubscriber => ({
  spaceId: toText(r.space_id),
  taskId: toText(r.task_id),
  subscriberId: toText(r.subscriber_id),
  scopeId: toText(r.scope_id),
  joinedAt: toMs(r.joined_at),
});

const jsonOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : jsonParam(v));

const taskInsertParams = (t: Task): SqlParam[] => [
  t.spaceId, t.id, t.taskKey, t.fingerprint, t.mailboxId, t.scopeId, t.state, jsonParam(t.input), jsonParam(t.requirements), t.workLimit, timeParamOrNull(t.deadline),
  t.attempts, jsonOrNull(t.outcome), t.failureReason, t.messageId, timeParam(t.createdAt), timeParam(t.updatedAt), t.groupId,
];

/**
 * Task inserts of a transaction as one statement (coalesced-writes.ts). DO NOTHING on the taskKey
 * only, and then baton_won: a submit that lost a key to a concurrent one fails its transaction as
 * raced (BT001), and runs again as a join (core/src/store/raced.ts).
 */
const insertTasks: Coalescible<Task> = {
  key: 'tasks.insert',
  statement(tasks) {
    if (tasks.length === 1) {
      const t = tasks[0]!;
      return {
        dml: `INSERT INTO tasks (${insertColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, $10, $11, $12, $13::jsonb, $14, $15, $16, $17, $18)
              ON CONFLICT (space_id, task_key) DO NOTHING RETURNING 1`,
        params: taskInsertParams(t),
        check: { guard: 'baton_won', rows: 1, message: `taskKey ${t.taskKey} is taken` },
      };
    }
    return {
      dml: `INSERT INTO tasks (${insertColumns})
               SELECT space_id, id, task_key, fingerprint, mailbox_id, scope_id, state, input::jsonb, requirements::jsonb, work_limit, deadline, attempts, outcome::jsonb,
                 failure_reason, message_id, created_at, updated_at, group_id
               FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::timestamptz[],
                 $12::int[], $13::text[], $14::text[], $15::text[], $16::timestamptz[], $17::timestamptz[], $18::text[])
                 AS t(space_id, id, task_key, fingerprint, mailbox_id, scope_id, state, input, requirements, work_limit, deadline, attempts, outcome, failure_reason,
                   message_id, created_at, updated_at, group_id)
             ON CONFLICT (space_id, task_key) DO NOTHING RETURNING 1`,
      params: unnestColumns(tasks.map(taskInsertParams)),
      check: { guard: 'baton_won', rows: tasks.length, message: `one of ${tasks.length} taskKeys is taken` },
    };
  },
};

const taskStateParams = (t: Task) => [t.spaceId, t.id, t.state, t.attempts, jsonOrNull(t.outcome), t.failureReason, t.messageId, timeParam(t.updatedAt), t.groupId];

/** What a task update that changed no row means: a missing task is a bug, but the usual cause is a join. */
const joinedSinceRead = (what: string): string => `update of ${what}: missing, or joined a task group since it was read`;

/**
 * Task updates of a transaction as one guarded UPDATE (coalesced-writes.ts); one alone as before.
 * An outcome is never written back onto a tombstoned row: a request that read a finished task
 * before the retention sweep tombstoned it (a group adding it) must not restore what was cleared.
 *
 * Each update holds only if the task's group_id is still the one it was read with, else the
 * transaction lost a race (baton_won, BT001) and runs again. Why: a task's end reads its task
 * without a lock (the update rides with the COMMIT) and tells the task's group only when the task
 * it read has one. A join-task that committed between that read and the update would leave the
 * group with a member that ended unseen, undecided while its rule was met
 * (test/task-update-race.pg.test.ts). group_id changes only from NULL to a group (addMember), so
 * the run again reads the group and tells it.
 */
const updateTasks: Coalescible<Task> = {
  key: 'tasks.update',
  statement(tasks) {
    if (tasks.length === 1) {
      const t = tasks[0]!;
      return {
        dml: `UPDATE tasks SET state = $3, attempts = $4, outcome = CASE WHEN tombstoned THEN NULL ELSE $5::jsonb END, failure_reason = $6, message_id = $7, updated_at = $8
              WHERE space_id = $1 AND id = $2 AND group_id IS NOT DISTINCT FROM $9 RETURNING 1`,
        params: taskStateParams(t),
        check: { guard: 'baton_won', rows: 1, message: joinedSinceRead(`task ${t.id}`) },
      };
    }
    return {
      dml: `UPDATE tasks t SET state = v.state, attempts = v.attempts, outcome = CASE WHEN t.tombstoned THEN NULL ELSE v.outcome::jsonb END, failure_reason = v.failure_reason, message_id = v.message_id, updated_at = v.updated_at
            FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::timestamptz[], $9::text[])
              AS v(space_id, id, state, attempts, outcome, failure_reason, message_id, updated_at, group_id)
            WHERE t.space_id = v.space_id AND t.id = v.id AND t.group_id IS NOT DISTINCT FROM v.group_id RETURNING 1`,
      params: unnestColumns(tasks.map(taskStateParams)),
      check: { guard: 'baton_won', rows: tasks.length, message: joinedSinceRead(`one of ${tasks.length} tasks`) },
    };
  },
};

export function sqlTasks(q: SqlQueryable): TaskRepository {
  return {
    async insert(t) {
      assertTask(t);
      assert(!t.tombstoned, `task ${t.id}: inserted tombstoned`);
      // DO NOTHING on the taskKey only, and then baton_won: a submit that lost the key to a
      // concurrent one fails its transaction as raced (BT001), and runs again as a join.
      await coalescedWrite(q, insertTasks, t, `tasks/${t.spaceId}/${t.id}`);
    },
    async get(spaceId, id, options) {
      const lock = lockClause(options);
      const [row] = await q.query<Row>(`SELECT ${taskColumns} FROM tasks WHERE space_id = $1 AND id = $2${lock}`, [spaceId, id]);
      return row && toTask(row);
    },
    async getByKeys(spaceId, taskKeys) {
      const rows = await q.query<Row>(`SELECT ${taskColumns} FROM tasks WHERE space_id = $1 AND task_key = ANY($2::text[])`, [spaceId, [...new Set(taskKeys)]]);
      return rows.map(toTask);
    },
    async getByKey(spaceId, taskKey) {
      const [row] = await q.query<Row>(`SELECT ${taskColumns} FROM tasks WHERE space_id = $1 AND task_key = $2`, [spaceId, taskKey]);
      return row && toTask(row);
    },
    async update(t) {
      assertTask(t);
      await coalescedWrite(q, updateTasks, t, `tasks/${t.spaceId}/${t.id}`);
    },
    async getByDeliveries(spaceId, messageIds) {
      const rows = await q.query<Row>(
        `SELECT ${taskColumns} FROM tasks WHERE space_id = $1 AND id IN (SELECT task_id FROM messages WHERE space_id = $1 AND id = ANY($2::text[]) AND task_id IS NOT NULL)`,
        [spaceId, [...new Set(messageIds)]],
      );
      return rows.map(toTask);
    },
    async getByDelivery(spaceId, messageId) {
      const [row] = await q.query<Row>(
        `SELECT ${taskColumns} FROM tasks WHERE space_id = $1 AND id = (SELECT task_id FROM messages WHERE space_id = $1 AND id = $2)`,
        [spaceId, messageId],
      );
      return row && toTask(row);
    },
    async list(spaceId, scopeId, states, after, limit) {
      const rows = await q.query<Row>(
        `SELECT ${taskColumns} FROM tasks
         WHERE space_id = $1 AND ($2::text IS NULL OR scope_id = $2) AND ($3::text[] IS NULL OR state = ANY($3::text[]))
           AND ($4::timestamptz IS NULL OR (created_at, id) > ($4::timestamptz, $5::text))
         ORDER BY created_at, id LIMIT $6`,
        [spaceId, scopeId, states, after === null ? null : timeParam(after.createdAt), after?.id ?? '', limit],
      );
      return rows.map(toTask);
    },
    async claimDeadlinePassed(nowMs, limit) {
      // Every task has its delivery (both are written by one submit transaction), so an inner
      // join loses none; FOR UPDATE cannot lock the nullable side of an outer join anyway.
      // Locks the task and its delivery together, passing over either when another transaction
      // holds it (a complete holds the message): never waits, so never deadlocks with the
      // message-then-task order of the message service.
      const rows = await q.query<Row>(
        `SELECT ${taskColumns.split(', ').map((c) => `t.${c}`).join(', ')} FROM tasks t
         JOIN messages m ON m.space_id = t.space_id AND m.id = t.message_id
         WHERE t.live_deadline <= $1
         ORDER BY t.live_deadline, t.created_at, t.id LIMIT $2 FOR UPDATE OF t, m SKIP LOCKED`,
        [timeParam(nowMs), limit],
      );
      return rows.map(toTask);
    },
    async tombstoneFinished(cutoffs, limit) {
      if (cutoffs.length === 0) return 0;
      // Per space, the tasks_untombstoned range created_at <= cutoff (migration 020), then the
      // finished test: a task finishes after it was created, so none due lies outside the range.
      // updated_at is when a finished task finished (it never moves again) and is kept as is.
      // No ORDER BY: any due rows will do, and without one the planner never reads (and sorts)
      // a space's whole backlog to return the first `limit` of it.
      const rows = await q.query(
        `UPDATE tasks t SET input = 'null'::jsonb, outcome = NULL, tombstoned = true
         FROM (
           SELECT d.space_id, d.id FROM unnest($1::text[], $2::timestamptz[]) AS c(space_id, cutoff)
           CROSS JOIN LATERAL (
             SELECT space_id, id FROM tasks
             WHERE space_id = c.space_id AND NOT tombstoned AND created_at <= c.cutoff AND state = ANY($3::text[]) AND updated_at <= c.cutoff
             LIMIT $4 FOR UPDATE SKIP LOCKED) d
           LIMIT $4) due
         WHERE t.space_id = due.space_id AND t.id = due.id
         RETURNING 1`,
        [cutoffs.map((c) => c.spaceId), cutoffs.map((c) => timeParam(c.cutoffMs)), [...terminalTaskStates], limit],
      );
      return rows.length;
    },
    async addSubscriber(s) {
      const rows = await q.query(
        `INSERT INTO task_subscribers (space_id, task_id, subscriber_id, scope_id, joined_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (space_id, task_id, subscriber_id) DO NOTHING RETURNING subscriber_id`,
        [s.spaceId, s.taskId, s.subscriberId, s.scopeId, timeParam(s.joinedAt)],
      );
      return rows.length === 1;
    },
    async removeSubscriber(spaceId, taskId, subscriberId) {
      const rows = await q.query(`DELETE FROM task_subscribers WHERE space_id = $1 AND task_id = $2 AND subscriber_id = $3 RETURNING subscriber_id`, [spaceId, taskId, subscriberId]);
      return rows.length === 1;
    },
    async listSubscribers(spaceId, taskId) {
      const rows = await q.query<Row>(
        `SELECT space_id, task_id, subscriber_id, scope_id, joined_at FROM task_subscribers WHERE space_id = $1 AND task_id = $2 ORDER BY joined_at, subscriber_id`,
        [spaceId, taskId],
      );
      return rows.map(toSubscriber);
    },
    async listEvents(spaceId, taskId, limit) {
      // events_by_task (migration 030) in its own order: `aggregate_type = 'task'` written out so
      // the planner can prove the partial index's predicate.
      const rows = await q.query<Row>(
        `SELECT space_id, tx::text AS xid, event_id, type, aggregate_type, aggregate_id, scope_id, data, occurred_at FROM events
         WHERE space_id = $1 AND aggregate_type = 'task' AND aggregate_id = $2 ORDER BY tx, event_id LIMIT $3`,
        [spaceId, taskId, limit],
      );
      return rows.map(
        (r): JournalEvent => ({
          eventId: encodePosition(toBigint(r.xid), toBigint(r.event_id)),
          spaceId: toText(r.space_id),
          type: toText(r.type),
          aggregateType: toText(r.aggregate_type),
          aggregateId: toText(r.aggregate_id),
          scopeId: toTextOrNull(r.scope_id),
          data: fromJson<Record<string, unknown>>(r.data),
          occurredAt: toMs(r.occurred_at),
        }),
      );
    },
  };
}
