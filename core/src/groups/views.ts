import type { GroupView } from '../schemas/groups';
import { isTerminalTask } from '../tasks/model';
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

/**
 * When a group long poll (GET /task-groups/{id}?waitMs=) is over: the group DECIDED, or a member
 * ended that had not when the wait began (`endedAtStart`): what a coordinator waits for, to give
 * its verdict. A member joining or starting does not end it.
 */
export function groupWaitOver(endedAtStart: ReadonlySet<string>, view: GroupView): boolean {
  return view.state === 'DECIDED' || view.members.some((m) => isTerminalTask(m.taskState) && !endedAtStart.has(m.taskId));
}

/** The members of a group view whose task has ended. */
export const endedMembers = (view: GroupView): Set<string> => new Set(view.members.filter((m) => isTerminalTask(m.taskState)).map((m) => m.taskId));

/** The members of a group view whose task is still live: their ends are what a group long poll wakes on, with the group's own events. */
export const liveMembers = (view: GroupView): string[] => view.members.filter((m) => !isTerminalTask(m.taskState)).map((m) => m.taskId);
