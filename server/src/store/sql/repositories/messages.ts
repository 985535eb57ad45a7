import { assert, assertMailbox, assertMessage, type Candidate, type ClaimedDelivery, type ClaimRequest, type LockedDelivery, type Mailbox, type MailboxRepository, type Message, type MessageRepository, type NewMessage } from '@baton/core';
import { lockClause } from './lock-clause';
import { fromJson, jsonParam, timeParam, timeParamOrNull, toInt, toMs, toMsOrNull, toText, toTextArray, toTextOrNull } from '../codec';
import type { SqlParam, SqlQueryable } from '../driver';
import { guardedMany, guardedOne, unnestColumns } from './guarded-write';
import { coalescedWrite, type Coalescible } from '../coalesced-writes';
import { taskColumns, toTask } from './tasks';

type Row = Record<string, unknown>;

/** A claim's moved task, its columns prefixed t_ beside the message's. */
const noMovedColumns = taskColumns.split(', ').map((col) => `NULL AS t_${col}`).join(', ');
const prefixedTaskColumns = (alias: string): string => taskColumns.split(', ').map((col) => `${alias}.${col} AS t_${col}`).join(', ');
const movedTask = (row: Row): Row => Object.fromEntries(taskColumns.split(', ').map((col) => [col, row[`t_${col}`]]));

/**
 * The `moved` step of every claim statement: the tasks of the `taken` rows to RUNNING by the rule
 * of tasks/rules.ts movedWithDelivery and claimMove (attempts: the claim's attempt, updatedAt:
 * $8), an ended task left as it is. Lock order: the message (taken), then its task.
 *
 * A claim of one row names its task by key (`id = (SELECT task_id FROM taken)`, an index
 * condition whatever the statistics), not by the join alone: a generic plan made on statistics
 * older than the space's tasks put `tasks` outside the join and read every task of the space per
 * claim (6 ms at 1,300 tasks, seen with auto_explain; a claim of a task delivery took 12.5 ms
 * against 6.7 ms by key). A batch's claim keeps the join (`id = ANY` of the claimed task ids was
 * no index condition on such statistics either); the admit-batch statement had it so before.
 *
 * Each moved task comes back with its claimed message's columns, so no step joins `moved` back
 * to `taken`: that join of two CTEs, whose sizes the planner cannot know, was planned as a nested
 * loop, 2,450 comparisons for a batch of 50 (docs/growth.md).
 */
const moveClaimedTasks = (claims: 'one' | 'many'): string => `UPDATE tasks t SET state = 'RUNNING', attempts = taken.attempt, outcome = NULL, failure_reason = NULL, updated_at = $8
             FROM taken WHERE t.space_id = $1 AND ${claims === 'one' ? 't.id = (SELECT task_id FROM taken) AND ' : ''}t.id = taken.task_id AND t.state IN ('PENDING', 'RUNNING')
             RETURNING ${qualified('taken')}, true AS taken, ${prefixedTaskColumns('t')}`;

/**
 * The claimed rows of a claim statement: each with its moved task, or with NULL task columns
 * when it is a plain message or its task had ended (NOT IN over `moved` runs as a hashed
 * subplan: one pass, whatever the batch; a plain message's NULL task_id is tested apart, as
 * NULL NOT IN a non-empty set is not true).
 */
const claimedRows = (): string => `SELECT * FROM moved
           UNION ALL
           SELECT ${qualified('taken')}, true AS taken, ${noMovedColumns} FROM taken WHERE taken.task_id IS NULL OR taken.task_id NOT IN (SELECT t_id FROM moved)`;

/**
 * A row of a message with its task's t_ columns: a claimed row (claimedRows) as the delivery with
 * its moved task, undefined for a plain message or an ended task; an expired lease's row as the
 * delivery with its locked task, undefined for a plain message.
 */
const toClaimed = (row: Row): ClaimedDelivery & LockedDelivery => ({ message: toMessage(row), task: row.t_id === null ? undefined : toTask(movedTask(row)) });

/** A candidate claim's row: claimed, with its moved task, or only locked. */
function toCandidate(row: Row): Candidate {
  if (row.taken !== true) return { message: toMessage(row), claimed: false };
  return { ...toClaimed(row), claimed: true };
}

/**
 * The live (READY or CLAIMED) messages of one mailbox, or of the whole space when `mailbox` is
 * '' : a sum over the slots of message_counts (migration 028), at most 64 rows. `$1` is the space.
 */
const liveCount = (mailbox: string): string =>
  `(SELECT coalesce(sum(live), 0) FROM message_counts WHERE space_id = $1 AND mailbox_id = ${mailbox})`;

const mailboxColumns = 'space_id, id, name, mode, recipient_id, backlog_limit, created_at, updated_at';

function toMailbox(r: Row): Mailbox {
  const m: Mailbox = {
    spaceId: toText(r.space_id),
    id: toText(r.id),
    name: toText(r.name),
    mode: toText(r.mode) as Mailbox['mode'],
    recipientId: toTextOrNull(r.recipient_id),
    backlogLimit: toInt(r.backlog_limit),
    createdAt: toMs(r.created_at),
    updatedAt: toMs(r.updated_at),
  };
  assertMailbox(m);
  return m;
}

/**
 * The claim's scope condition on $3. One scope (the common case: no group below the request's
 * scope) is an equality, which walks messages_ready in seq order and stops at the first row.
 * Several are `= ANY`, which PostgreSQL answers by reading the READY rows of those scopes and
 * sorting them: exact FIFO across the subtree, at a cost that grows with its READY backlog.
 */
const scopeMatch = (scopeIds: readonly string[]): string => (scopeIds.length === 1 ? 'scope_id = $3' : 'scope_id = ANY($3::text[])');
/**
 * An unlessGated claim's condition (ClaimRequest.unlessGated): no task group below the one scope
 * $3. A group whose scope is $3 itself adds no scope below it, as in getForClaim's walk.
 */
const ungated = (c: Pick<ClaimRequest, 'scopeIds' | 'unlessGated'>): string => {
  if (c.unlessGated !== true) return '';
  assert(c.scopeIds.length === 1, `an unlessGated claim names ${c.scopeIds.length} scopes`);
  return ' AND NOT EXISTS (SELECT 1 FROM task_groups g WHERE g.space_id = $1 AND g.parent_scope_id = $3 AND g.scope_id <> $3)';
};
const scopeParam = (scopeIds: readonly string[]): SqlParam => {
  assert(scopeIds.length >= 1, 'a claim names no scope');
  return scopeIds.length === 1 ? scopeIds[0]! : scopeIds;
};

export function sqlMailboxes(q: SqlQueryable): MailboxRepository {
  return {
    async insert(m) {
      // DO NOTHING on the name only: a create racing another of the same name answers as a repeat.
      const inserted = await q.query(
        `INSERT INTO mailboxes (${mailboxColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (space_id, name) DO NOTHING RETURNING id`,
        [m.spaceId, m.id, m.name, m.mode, m.recipientId, m.backlogLimit, timeParam(m.createdAt), timeParam(m.updatedAt)],
      );
      return inserted.length === 1;
    },
    async get(spaceId, id, options) {
      const lock = lockClause(options);
      const [row] = await q.query<Row>(`SELECT ${mailboxColumns} FROM mailboxes WHERE space_id = $1 AND id = $2${lock}`, [spaceId, id]);
      return row && toMailbox(row);
    },
    async getForClaim(spaceId, id, scopeId) {
      // The gate scopes below scopeId ride along in the mailbox's round trip. Folding them into
      // the claim statement instead was measured to cost a plan that walks every READY row of
      // the mailbox (54 ms at 30,000 rows) where the one-scope claim takes 0.1 ms.
      const [row] = await q.query<Row & { scope_ids: unknown }>(
        `SELECT ${mailboxColumns}, ARRAY(
           WITH RECURSIVE below(id) AS (
             SELECT $3::text COLLATE "C"
             UNION
             SELECT g.scope_id FROM task_groups g JOIN below ON g.space_id = $1 AND g.parent_scope_id = below.id
           ) SELECT id FROM below) AS scope_ids
         FROM mailboxes WHERE space_id = $1 AND id = $2`,
        [spaceId, id, scopeId],
      );
      if (!row) return undefined;
      const below = toTextArray(row.scope_ids).filter((s) => s !== scopeId);
      return { mailbox: toMailbox(row), scopeIds: [scopeId, ...below] };
    },
    async getForSend(spaceId, id, spaceCap) {
      // The counts are countLive's, read from message_counts (migration 028) in the mailbox's
      // statement: a few rows whatever the backlog.
      const [row] = await q.query<Row & { in_mailbox: unknown; in_space: unknown }>(
        `SELECT ${mailboxColumns},
           least(${liveCount('$2')}, mb.backlog_limit) AS in_mailbox,
           least(${liveCount("''")}, $3) AS in_space
         FROM mailboxes mb WHERE space_id = $1 AND id = $2`,
        [spaceId, id, spaceCap],
      );
      if (!row) return undefined;
      return { mailbox: toMailbox(row), live: { mailbox: toInt(row.in_mailbox), space: toInt(row.in_space) } };
    },
    async getByName(spaceId, name) {
      const [row] = await q.query<Row>(`SELECT ${mailboxColumns} FROM mailboxes WHERE space_id = $1 AND name = $2`, [spaceId, name]);
      return row && toMailbox(row);
    },
    async list(spaceId, afterName, limit) {
      const rows =
        afterName === null
          ? await q.query<Row>(`SELECT ${mailboxColumns} FROM mailboxes WHERE space_id = $1 ORDER BY name LIMIT $2`, [spaceId, limit])
          : await q.query<Row>(`SELECT ${mailboxColumns} FROM mailboxes WHERE space_id = $1 AND name > $2 ORDER BY name LIMIT $3`, [spaceId, afterName, limit]);
      return rows.map(toMailbox);
    },
  };
}

const columnNames = [
  'space_id', 'id', 'mailbox_id', 'seq', 'scope_id', 'payload', 'work_key', 'deadline', 'task_id', 'state', 'attempt', 'token_hash', 'holder', 'holder_session',
  'lease_expires_at', 'result', 'requirements', 'claimed', 'created_at', 'updated_at',
];
const messageColumns = columnNames.join(', ');
const qualified = (alias: string): string => columnNames.map((c) => `${alias}.${c}`).join(', ');

function toMessage(r: Row): Message {
  const m: Message = {
    spaceId: toText(r.space_id),
    id: toText(r.id),
    mailboxId: toText(r.mailbox_id),
    seq: toInt(r.seq),
    scopeId: toText(r.scope_id),
    payload: fromJson(r.payload),
    workKey: toTextOrNull(r.work_key),
    deadline: toMsOrNull(r.deadline),
    taskId: toTextOrNull(r.task_id),
    state: toText(r.state) as Message['state'],
    attempt: toInt(r.attempt),
    tokenHash: toTextOrNull(r.token_hash),
    holder: toTextOrNull(r.holder),
    holderSession: toTextOrNull(r.holder_session),
    leaseExpiresAt: toMsOrNull(r.lease_expires_at),
    result: fromJson(r.result),
    requirements: (fromJson(r.requirements) ?? null) as Message['requirements'],
    claimed: (fromJson(r.claimed) ?? null) as Message['claimed'],
    createdAt: toMs(r.created_at),
    updatedAt: toMs(r.updated_at),
  };
  assertMessage(m);
  return m;
}

/** The mutable columns, $3.. in this order after (space_id, id). */
function stateParams(m: Message): SqlParam[] {
  return [
    m.state, m.attempt, m.tokenHash, m.holder, m.holderSession, timeParamOrNull(m.leaseExpiresAt), m.result === null ? null : jsonParam(m.result), timeParam(m.updatedAt),
    m.claimed === null ? null : jsonParam(m.claimed),
  ];
}

const insertedColumns = 'space_id, id, mailbox_id, scope_id, payload, work_key, deadline, state, attempt, token_hash, holder, holder_session, lease_expires_at, result, created_at, updated_at, task_id, requirements, claimed';

function insertParams(m: NewMessage): SqlParam[] {
  return [
    m.spaceId, m.id, m.mailboxId, m.scopeId, jsonParam(m.payload), m.workKey, timeParamOrNull(m.deadline), m.state, m.attempt, m.tokenHash, m.holder, m.holderSession,
    timeParamOrNull(m.leaseExpiresAt), m.result === null ? null : jsonParam(m.result), timeParam(m.createdAt), timeParam(m.updatedAt), m.taskId,
    m.requirements === null ? null : jsonParam(m.requirements), m.claimed === null ? null : jsonParam(m.claimed),
  ];
}

/**
 * Message inserts of a transaction as one statement (coalesced-writes.ts). Several are one INSERT
 * ... SELECT from unnest WITH ORDINALITY, ordered: seq is an identity column, and taking its values
 * in the order the sends were made keeps FIFO.
 */
const insertMessages: Coalescible<NewMessage> = {
  key: 'messages.insert',
  statement(messages) {
    if (messages.length === 1) {
      return {
        dml: `INSERT INTO messages (${insertedColumns})
               VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10, $11, $12, $13, $14::jsonb, $15, $16, $17, $18::jsonb, $19::jsonb)`,
        params: insertParams(messages[0]!),
      };
    }
    return {
      dml: `INSERT INTO messages (${insertedColumns})
             SELECT space_id, id, mailbox_id, scope_id, payload::jsonb, work_key, deadline, state, attempt, token_hash, holder, holder_session, lease_expires_at, result::jsonb,
               created_at, updated_at, task_id, requirements::jsonb, claimed::jsonb
             FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::text[], $9::int[], $10::text[], $11::text[], $12::text[],
               $13::timestamptz[], $14::text[], $15::timestamptz[], $16::timestamptz[], $17::text[], $18::text[], $19::text[])
               WITH ORDINALITY AS m(space_id, id, mailbox_id, scope_id, payload, work_key, deadline, state, attempt, token_hash, holder, holder_session, lease_expires_at, result,
                 created_at, updated_at, task_id, requirements, claimed, n)
             ORDER BY n`,
      params: unnestColumns(messages.map(insertParams)),
    };
  },
};

/** Message updates of a transaction as one guarded UPDATE (coalesced-writes.ts); one alone as before. */
const updateMessages: Coalescible<Message> = {
  key: 'messages.update',
  statement(messages) {
    if (messages.length === 1) {
      const m = messages[0]!;
      return guardedOne(
        `UPDATE messages SET state = $3, attempt = $4, token_hash = $5, holder = $6, holder_session = $7, lease_expires_at = $8, result = $9::jsonb, updated_at = $10, claimed = $11::jsonb
         WHERE space_id = $1 AND id = $2 RETURNING 1`,
        [m.spaceId, m.id, ...stateParams(m)],
        `update of missing message ${m.id}`,
      );
    }
    return guardedMany(
      `UPDATE messages m SET state = v.state, attempt = v.attempt, token_hash = v.token_hash, holder = v.holder, holder_session = v.holder_session,
         lease_expires_at = v.lease_expires_at, result = v.result::jsonb, updated_at = v.updated_at, claimed = v.claimed::jsonb
       FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::timestamptz[], $9::text[], $10::timestamptz[], $11::text[])
         AS v(space_id, id, state, attempt, token_hash, holder, holder_session, lease_expires_at, result, updated_at, claimed)
       WHERE m.space_id = v.space_id AND m.id = v.id RETURNING 1`,
      messages.map((m) => [m.spaceId, m.id, ...stateParams(m)]),
      'update of a missing message',
    );
  },
};

export function sqlMessages(q: SqlQueryable): MessageRepository {
  return {
    async insert(m) {
      assertMessage({ ...m, seq: 0 });
      await coalescedWrite(q, insertMessages, m, `messages/${m.spaceId}/${m.id}`);
    },
    async get(spaceId, id, options) {
      const lock = lockClause(options);
      const [row] = await q.query<Row>(`SELECT ${messageColumns} FROM messages WHERE space_id = $1 AND id = $2${lock}`, [spaceId, id]);
      return row && toMessage(row);
    },
    async lockMany(spaceId, ids) {
      const rows = await q.query<Row>(`SELECT ${messageColumns} FROM messages WHERE space_id = $1 AND id = ANY($2::text[]) ORDER BY id FOR UPDATE`, [spaceId, [...new Set(ids)]]);
      return rows.map(toMessage);
    },
    async getByWorkKey(spaceId, mailboxId, workKey) {
      const [row] = await q.query<Row>(`SELECT ${messageColumns} FROM messages WHERE space_id = $1 AND mailbox_id = $2 AND work_key = $3`, [spaceId, mailboxId, workKey]);
      return row && toMessage(row);
    },
    async update(m) {
      assertMessage(m);
      await coalescedWrite(q, updateMessages, m, `messages/${m.spaceId}/${m.id}`);
    },
    async list(spaceId, mailboxId, states, after, limit) {
      const rows = await q.query<Row>(
        `SELECT ${messageColumns} FROM messages
         WHERE space_id = $1 AND mailbox_id = $2 AND seq > $3 AND ($4::text[] IS NULL OR state = ANY($4::text[]))
         ORDER BY seq LIMIT $5`,
        [spaceId, mailboxId, after ?? 0, states, limit],
      );
      return rows.map(toMessage);
    },
    async countLive(spaceId, mailboxId, caps) {
      // Capped as the interface asks, though message_counts knows the exact figure.
      const [row] = await q.query<{ in_mailbox: unknown; in_space: unknown }>(
        `SELECT least(${liveCount('$2')}, $3) AS in_mailbox, least(${liveCount("''")}, $4) AS in_space`,
        [spaceId, mailboxId, caps.mailbox, caps.space],
      );
      return { mailbox: toInt(row?.in_mailbox ?? 0), space: toInt(row?.in_space ?? 0) };
    },
    async claimNext(c) {
      // One statement: the subquery picks the oldest READY row and locks it, passing over rows
      // other claims hold (SKIP LOCKED); `taken` claims it, and `moved` moves its task when it
      // is a task delivery. Concurrent claims never wait on each other and never take one
      // message twice. `state = 'READY'` again on the outer row is belt and braces: the locked
      // row is re-checked against the subquery's WHERE anyway.
      const rows = await q.query<Row & { t_id: unknown }>(
        `WITH taken AS (
           UPDATE messages SET state = 'CLAIMED', attempt = attempt + 1, token_hash = $4, holder = $5, holder_session = $6, lease_expires_at = $7, updated_at = $8
           WHERE space_id = $1 AND state = 'READY' AND id = (
             SELECT id FROM messages WHERE space_id = $1 AND mailbox_id = $2 AND ${scopeMatch(c.scopeIds)} AND state = 'READY'${ungated(c)}
             ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
           RETURNING ${messageColumns}
         ), moved AS (${moveClaimedTasks('one')})
         ${claimedRows()}`,
        [c.spaceId, c.mailboxId, scopeParam(c.scopeIds), c.tokenHash, c.holder, c.holderSession, timeParam(c.leaseExpiresAt), timeParam(c.nowMs)],
      );
      assert(rows.length <= 1, `claimNext answered ${rows.length} rows`);
      const [row] = rows;
      return row && toClaimed(row);
    },
    async claimCandidate(c) {
      // One statement. `candidate` picks the oldest READY task delivery after afterSeq and locks
      // it (SKIP LOCKED: a row another admit is examining is passed over, never waited on);
      // `taken` claims it when it needs nothing, and `moved` moves its task as every claim does
      // (lock order: message, then task). The final SELECT answers the claimed row with the
      // moved task (t_ columns, NULL when the task had ended), or else the locked candidate as
      // `candidate` answered it: FOR UPDATE answers the row as locked, with any change committed
      // after the statement's snapshot, where a second read of messages would see the snapshot's
      // older row (test/claim-candidates-race.pg.test.ts).
      const rows = await q.query<Row & { taken: unknown; t_id: unknown }>(
        `WITH candidate AS (
           SELECT ${messageColumns} FROM messages
           WHERE space_id = $1 AND mailbox_id = $2 AND ${scopeMatch(c.scopeIds)} AND state = 'READY' AND task_id IS NOT NULL AND seq > $9${ungated(c)}
           ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED
         ), taken AS (
           UPDATE messages m SET state = 'CLAIMED', attempt = m.attempt + 1, token_hash = $4, holder = $5, holder_session = $6, lease_expires_at = $7, updated_at = $8
           FROM candidate WHERE m.space_id = $1 AND m.id = candidate.id AND m.requirements IS NULL
           RETURNING ${qualified('m')}
         ), moved AS (${moveClaimedTasks('one')})
         ${claimedRows()}
         UNION ALL
         SELECT ${qualified('candidate')}, false AS taken, ${noMovedColumns} FROM candidate WHERE NOT EXISTS (SELECT 1 FROM taken)`,
        [c.spaceId, c.mailboxId, scopeParam(c.scopeIds), c.tokenHash, c.holder, c.holderSession, timeParam(c.leaseExpiresAt), timeParam(c.nowMs), c.afterSeq],
      );
      const [row] = rows;
      assert(rows.length <= 1, `claimCandidate answered ${rows.length} rows`);
      return row && toCandidate(row);
    },
    async claimMany(c) {
      // claimNext for up to N rows: `picked` locks the oldest READY ones (SKIP LOCKED), each gets
      // one of the token hashes, and `moved` moves the tasks of the task deliveries among them.
      // Numbered in no particular order: ordering them would cost a sort for nothing (the caller
      // finds each row's token by its hash).
      const rows = await q.query<Row & { t_id: unknown }>(
        `WITH picked AS (
           SELECT id, seq FROM messages WHERE space_id = $1 AND mailbox_id = $2 AND ${scopeMatch(c.scopeIds)} AND state = 'READY'${ungated(c)}
           ORDER BY seq LIMIT $9 FOR UPDATE SKIP LOCKED
         ), numbered AS (SELECT id, row_number() OVER () AS k FROM picked
         ), taken AS (
           UPDATE messages m SET state = 'CLAIMED', attempt = m.attempt + 1, token_hash = ($4::text[])[numbered.k], holder = $5, holder_session = $6, lease_expires_at = $7, updated_at = $8
           FROM numbered WHERE m.space_id = $1 AND m.id = numbered.id AND m.state = 'READY'
           RETURNING ${qualified('m')}
         ), moved AS (${moveClaimedTasks('many')})
         ${claimedRows()}`,
        [c.spaceId, c.mailboxId, scopeParam(c.scopeIds), c.tokenHashes, c.holder, c.holderSession, timeParam(c.leaseExpiresAt), timeParam(c.nowMs), c.tokenHashes.length],
      );
      return rows.map(toClaimed).sort((a, b) => a.message.seq - b.message.seq);
    },
    async claimCandidates(c) {
      // claimCandidate for up to N rows, in one statement: `candidate` locks the oldest READY task
      // deliveries after afterSeq, `taken` claims those that need nothing (each with one of the
      // token hashes, as claimMany), `moved` moves their tasks; the final SELECT answers the claimed
      // rows with their moved tasks and the locked ones with requirements as locked: `candidate`
      // carries their columns, since FOR UPDATE answers a row with any change committed after the
      // statement's snapshot and a second read of messages would see the snapshot's older row
      // (test/claim-candidates-race.pg.test.ts).
      const rows = await q.query<Row & { taken: unknown; t_id: unknown }>(
        `WITH candidate AS (
           SELECT ${messageColumns}, requirements IS NULL AS free FROM messages
           WHERE space_id = $1 AND mailbox_id = $2 AND ${scopeMatch(c.scopeIds)} AND state = 'READY' AND task_id IS NOT NULL AND seq > $9${ungated(c)}
           ORDER BY seq LIMIT $10 FOR UPDATE SKIP LOCKED
         ), numbered AS (SELECT *, row_number() OVER () AS k FROM candidate
         ), taken AS (
           UPDATE messages m SET state = 'CLAIMED', attempt = m.attempt + 1, token_hash = ($4::text[])[numbered.k], holder = $5, holder_session = $6, lease_expires_at = $7, updated_at = $8
           FROM numbered WHERE numbered.free AND m.space_id = $1 AND m.id = numbered.id
           RETURNING ${qualified('m')}
         ), moved AS (${moveClaimedTasks('many')})
         ${claimedRows()}
         UNION ALL
         SELECT ${qualified('numbered')}, false AS taken, ${noMovedColumns} FROM numbered WHERE NOT numbered.free`,
        [c.spaceId, c.mailboxId, scopeParam(c.scopeIds), c.tokenHashes, c.holder, c.holderSession, timeParam(c.leaseExpiresAt), timeParam(c.nowMs), c.afterSeq, c.tokenHashes.length],
      );
      return rows.map(toCandidate).sort((a, b) => a.message.seq - b.message.seq);
    },
    async claimExpired(nowMs, limit) {
      // One statement: `expired` locks the deliveries (SKIP LOCKED: another sweeper's, or a
      // complete's, are passed over), then each one's task is locked by key behind it (lock
      // order: message, then task; LATERAL makes it a primary-key lookup per delivery whatever
      // the statistics). Locking is what makes the task read current: a plain read in the same
      // statement would see the statement's snapshot, from before a deadline sweep that
      // committed while this one waited; a row lock answers the latest version. Ordered by the
      // caller's sort.
      const rows = await q.query<Row & { t_id: unknown }>(
        `WITH expired AS MATERIALIZED (
           SELECT ${messageColumns} FROM messages WHERE state = 'CLAIMED' AND lease_expires_at <= $1 ORDER BY lease_expires_at, seq LIMIT $2 FOR UPDATE SKIP LOCKED
         )
         SELECT ${qualified('e')}, ${prefixedTaskColumns('t')} FROM expired e
         LEFT JOIN LATERAL (SELECT ${taskColumns} FROM tasks WHERE space_id = e.space_id AND id = e.task_id FOR UPDATE) t ON true`,
        [timeParam(nowMs), limit],
      );
      return rows.map(toClaimed).sort((a, b) => a.message.leaseExpiresAt! - b.message.leaseExpiresAt! || a.message.seq - b.message.seq);
    },
    async census(limit) {
      // The counts come from message_counts (migration 028), a few rows per mailbox; only the
      // `limit` mailboxes kept are named from mailboxes and have their oldest READY row found,
      // over messages_ready: their READY rows, never their ACKED or CANCELLED history.
      const rows = await q.query<Row>(
        `WITH counted AS (
           SELECT space_id, mailbox_id, sum(live) - sum(claimed) AS ready, sum(claimed) AS claimed, sum(dead) AS dead
           FROM message_counts WHERE mailbox_id <> '' GROUP BY space_id, mailbox_id
           HAVING sum(live) > 0 OR sum(dead) > 0
         ), ranked AS (
           SELECT * FROM counted ORDER BY ready + claimed DESC, dead DESC, space_id, mailbox_id LIMIT $1
         )
         SELECT r.space_id, r.mailbox_id, mb.name, r.ready, r.claimed, r.dead,
           (SELECT min(m.created_at) FROM messages m WHERE m.space_id = r.space_id AND m.mailbox_id = r.mailbox_id AND m.state = 'READY') AS oldest_ready_at
         FROM ranked r JOIN mailboxes mb ON mb.space_id = r.space_id AND mb.id = r.mailbox_id
         ORDER BY r.ready + r.claimed DESC, r.dead DESC, r.space_id, r.mailbox_id`,
        [limit],
      );
      return rows.map((r) => ({
        spaceId: toText(r.space_id),
        mailboxId: toText(r.mailbox_id),
        mailboxName: toText(r.name),
        ready: toInt(r.ready),
        claimed: toInt(r.claimed),
        dead: toInt(r.dead),
        oldestReadyAt: toMsOrNull(r.oldest_ready_at),
      }));
    },
    async purgeFinished(cutoffs, limit) {
      if (cutoffs.length === 0) return 0;
      // Per space, one range of messages_finished (migration 020). The states are written out,
      // not a parameter, so the planner can prove the partial index's predicate. No ORDER BY:
      // any due rows will do, and the planner never reads and sorts a space's whole backlog.
      const rows = await q.query(
        `DELETE FROM messages m USING (
           SELECT d.space_id, d.id FROM unnest($1::text[], $2::timestamptz[]) AS c(space_id, cutoff)
           CROSS JOIN LATERAL (
             SELECT space_id, id FROM messages
             WHERE space_id = c.space_id AND state IN ('ACKED', 'DEAD', 'CANCELLED') AND updated_at <= c.cutoff
             LIMIT $3 FOR UPDATE SKIP LOCKED) d
           LIMIT $3) due
         WHERE m.space_id = due.space_id AND m.id = due.id
         RETURNING 1`,
        [cutoffs.map((c) => c.spaceId), cutoffs.map((c) => timeParam(c.cutoffMs)), limit],
      );
      return rows.length;
    },
  };
}
