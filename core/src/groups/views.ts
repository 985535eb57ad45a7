import type { GroupView } from '../schemas/groups';
import { isoFromMs } from '../time';
import type { MemberRow, TaskGroup } from './model';

export function groupView(g: TaskGroup, members: readonly MemberRow[]): GroupView {
  return {
    id: g.id,
    scopeId: g.scopeId,
    parentScopeId: g.parentScopeId,
    mailboxId: g.mailboxId,
    state: g.state,
    condition: g.condition,
    threshold: g.threshold,
    expectedMembers: g.expectedMembers,
    deadline: g.deadline === null ? null : isoFromMs(g.deadline),
    outcome: g.outcome,
    outcomeReason: g.outcomeReason,
    decidedAt: g.decidedAt === null ? null : isoFromMs(g.decidedAt),
    members: members.map((m) => ({ taskId: m.taskId, taskState: m.taskState, verdict: m.verdict, joinedAt: isoFromMs(m.joinedAt) })),
    createdAt: isoFromMs(g.createdAt),
    updatedAt: isoFromMs(g.updatedAt),
  };
}
