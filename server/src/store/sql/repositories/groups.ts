import { assertGroup, type GroupMember, type MemberRow, type TaskGroup, type TaskGroupRepository } from '@baton/core';
import { timeParam, timeParamOrNull, toInt, toMs, toMsOrNull, toText, toTextOrNull } from '../codec';
import type { SqlParam, SqlQueryable } from '../driver';
import { writeOne } from './guarded-write';
import { lockClause } from './lock-clause';

type Row = Record<string, unknown>;

const columns =
  'space_id, id, scope_id, parent_scope_id, mailbox_id, condition, threshold, expected_members, deadline, state, outcome, outcome_reason, member_count, decided_at, created_at, updated_at';
const qualified = (alias: string): string => columns.split(', ').map((c) => `${alias}.${c}`).join(', ');

function toGroup(r: Row): TaskGroup {
  const g: TaskGroup = {
    spaceId: toText(r.space_id),
    id: toText(r.id),
    scopeId: toText(r.scope_id),
    parentScopeId: toTextOrNull(r.parent_scope_id),
    mailboxId: toText(r.mailbox_id),
    condition: toText(r.condition) as TaskGroup['condition'],
    threshold: r.threshold === null ? null : toInt(r.threshold),
    expectedMembers: r.expected_members === null ? null : toInt(r.expected_members),
    deadline: toMsOrNull(r.deadline),
    state: toText(r.state) as TaskGroup['state'],
    outcome: toTextOrNull(r.outcome) as TaskGroup['outcome'],
    outcomeReason: toTextOrNull(r.outcome_reason) as TaskGroup['outcomeReason'],
    memberCount: toInt(r.member_count),
    decidedAt: toMsOrNull(r.decided_at),
    createdAt: toMs(r.created_at),
    updatedAt: toMs(r.updated_at),
  };
  assertGroup(g);
  return g;
}

const toMemberRow = (r: Row): MemberRow => ({
  spaceId: toText(r.space_id),
  groupId: toText(r.group_id),
  taskId: toText(r.task_id),
  position: toInt(r.position),
  verdict: toText(r.verdict) as GroupMember['verdict'],
  joinedAt: toMs(r.joined_at),
  verdictAt: toMsOrNull(r.verdict_at),
  taskState: toText(r.task_state) as MemberRow['taskState'],
});

/** Parameters $1..$16 in `columns` order. */
const params = (g: TaskGroup): SqlParam[] => [
  g.spaceId, g.id, g.scopeId, g.parentScopeId, g.mailboxId, g.condition, g.threshold, g.expectedMembers, timeParamOrNull(g.deadline),
  g.state, g.outcome, g.outcomeReason, g.memberCount, timeParamOrNull(g.decidedAt), timeParam(g.createdAt), timeParam(g.updatedAt),
];

const memberSelect = `SELECT m.space_id, m.group_id, m.task_id, m.position, m.verdict, m.joined_at, m.verdict_at, t.state AS task_state
  FROM task_group_members m JOIN tasks t ON t.space_id = m.space_id AND t.id = m.task_id`;

export function sqlTaskGroups(q: SqlQueryable): TaskGroupRepository {
  return {
    async insert(g) {
      assertGroup(g);
      await q.write(`INSERT INTO task_groups (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`, params(g));
    },
    async get(spaceId, id, options) {
      const [row] = await q.query<Row>(`SELECT ${columns} FROM task_groups WHERE space_id = $1 AND id = $2${lockClause(options)}`, [spaceId, id]);
      return row && toGroup(row);
    },
    async update(g) {
      assertGroup(g);
      // Only what changes after create: state, outcome, membership and times.
      await writeOne(q, `UPDATE task_groups SET state = $3, outcome = $4, outcome_reason = $5, member_count = $6, decided_at = $7, updated_at = $8 WHERE space_id = $1 AND id = $2 RETURNING 1`, [g.spaceId, g.id, g.state, g.outcome, g.outcomeReason, g.memberCount, timeParamOrNull(g.decidedAt), timeParam(g.updatedAt)], `update of missing group ${g.id}`);
    },
    async list(spaceId, states, after, limit) {
      const rows = await q.query<Row>(
        `SELECT ${columns} FROM task_groups
         WHERE space_id = $1 AND ($2::text[] IS NULL OR state = ANY($2::text[])) AND ($3::timestamptz IS NULL OR (created_at, id) > ($3::timestamptz, $4::text))
         ORDER BY created_at, id LIMIT $5`,
        [spaceId, states, after === null ? null : timeParam(after.createdAt), after?.id ?? null, limit],
      );
      return rows.map(toGroup);
    },
    async addMember(m) {
      // One statement: the task row takes the groupId only while it has none (the row lock of the
      // UPDATE makes two joins of one task take turns), and the member row goes in with it.
      const rows = await q.query<Row>(
        `WITH joined AS (
           UPDATE tasks SET group_id = $2 WHERE space_id = $1 AND id = $3 AND group_id IS NULL RETURNING id
         )
         INSERT INTO task_group_members (space_id, group_id, task_id, position, verdict, joined_at, verdict_at)
         SELECT $1, $2, id, $4, $5, $6, $7 FROM joined RETURNING task_id`,
        [m.spaceId, m.groupId, m.taskId, m.position, m.verdict, timeParam(m.joinedAt), timeParamOrNull(m.verdictAt)],
      );
      return rows.length === 1;
    },
    async setVerdict(spaceId, groupId, taskId, verdict, atMs) {
      await writeOne(
        q,
        `UPDATE task_group_members SET verdict = $4, verdict_at = $5 WHERE space_id = $1 AND group_id = $2 AND task_id = $3 RETURNING 1`,
        [spaceId, groupId, taskId, verdict, timeParam(atMs)],
        `verdict on ${taskId}, not a member of ${groupId}`,
      );
    },
    async getMember(spaceId, groupId, taskId) {
      const [row] = await q.query<Row>(`${memberSelect} WHERE m.space_id = $1 AND m.group_id = $2 AND m.task_id = $3`, [spaceId, groupId, taskId]);
      return row && toMemberRow(row);
    },
    async listMembers(spaceId, groupId) {
      const rows = await q.query<Row>(`${memberSelect} WHERE m.space_id = $1 AND m.group_id = $2 ORDER BY m.position`, [spaceId, groupId]);
      return rows.map(toMemberRow);
    },
    async listMembersOf(spaceId, groupIds) {
      if (groupIds.length === 0) return [];
      const rows = await q.query<Row>(`${memberSelect} WHERE m.space_id = $1 AND m.group_id = ANY($2::text[]) ORDER BY m.group_id, m.position`, [spaceId, groupIds]);
      return rows.map(toMemberRow);
    },
    async claimDeadlinePassed(nowMs, limit) {
      const rows = await q.query<Row>(
        `SELECT ${qualified('g')} FROM task_groups g WHERE g.state <> 'DECIDED' AND g.deadline IS NOT NULL AND g.deadline <= $1
         ORDER BY g.deadline, g.created_at, g.id LIMIT $2 FOR UPDATE SKIP LOCKED`,
        [timeParam(nowMs), limit],
      );
      return rows.map(toGroup);
    },
    async scopeSubtree(spaceId, scopeId) {
      // The walk getForClaim does (messages.ts), without a mailbox: one statement, one index range per level.
      const rows = await q.query<{ id: unknown }>(
        `WITH RECURSIVE below(id) AS (
           SELECT $2::text COLLATE "C"
           UNION
           SELECT g.scope_id FROM task_groups g JOIN below ON g.space_id = $1 AND g.parent_scope_id = below.id
         ) SELECT id FROM below`,
        [spaceId, scopeId],
      );
      const below = rows.map((r) => toText(r.id)).filter((s) => s !== scopeId);
      return [scopeId, ...below];
    },
  };
}
