import { assert } from '../../assert';
import type { GroupMember, MemberRow, TaskGroup } from '../../groups/model';
import { assertGroup } from '../../groups/rules';
import type { TaskState } from '../../tasks/model';
import type { TaskGroupRepository } from '../../groups/repository';
import type { LockOptions, TaskRepository } from '../repositories';
import { cloneRow, MemoryTable } from './table';

const key = (spaceId: string, id: string): string => `${spaceId}\u0000${id}`;
const byCreated = (a: { createdAt: number; id: string }, b: { createdAt: number; id: string }): number => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * Task groups in memory. Transactions run one at a time, so a lock is a no-op. Members reach
 * their tasks through the task repository, as the SQL store joins the two tables.
 */
export function memoryGroups(
  undoLog: () => (() => void)[] | undefined,
  tasks: TaskRepository,
): { taskGroups: TaskGroupRepository; scopeSubtree: (spaceId: string, scopeId: string) => string[]; gateParentOf: (spaceId: string, scopeId: string) => string | null } {
  const groups = new MemoryTable<TaskGroup>(undoLog);
  /** Each group's gate scope to its parent scope: every request that creates work walks up through it (runs' governing). */
  const gates = new MemoryTable<{ parentScopeId: string | null }>(undoLog);
  const members = new MemoryTable<GroupMember>(undoLog);
  const lock = (_options?: LockOptions): void => undefined;
  const memberKey = (spaceId: string, taskId: string): string => key(spaceId, taskId);
  const taskStateOf = async (spaceId: string, taskId: string): Promise<TaskState> => {
    const task = await tasks.get(spaceId, taskId);
    assert(task !== undefined, `member ${taskId} has no task`);
    return task.state;
  };
  const withTaskState = async (m: GroupMember): Promise<MemberRow> => ({ ...m, taskState: await taskStateOf(m.spaceId, m.taskId) });

  const scopeSubtree = (spaceId: string, scopeId: string): string[] => {
    const found = [scopeId];
    for (let i = 0; i < found.length; i++) {
      for (const g of groups.scan()) if (g.spaceId === spaceId && g.parentScopeId === found[i] && !found.includes(g.scopeId)) found.push(g.scopeId);
    }
    return found;
  };

  /** The parent of a gate scope (its group's parentScopeId); null for a scope no group gates. */
  const gateParentOf = (spaceId: string, scopeId: string): string | null => gates.peek(key(spaceId, scopeId))?.parentScopeId ?? null;

  const taskGroups: TaskGroupRepository = {
    insert: async (g) => {
      assertGroup(g);
      assert(!groups.has(key(g.spaceId, g.id)), `duplicate group ${g.id}`);
      groups.set(key(g.spaceId, g.id), g);
      gates.set(key(g.spaceId, g.scopeId), { parentScopeId: g.parentScopeId });
    },
    get: async (spaceId, id, options) => (lock(options), groups.get(key(spaceId, id))),
    update: async (g) => {
      assertGroup(g);
      assert(groups.has(key(g.spaceId, g.id)), `update of missing group ${g.id}`);
      groups.set(key(g.spaceId, g.id), g);
    },
    list: async (spaceId, states, after, limit) =>
      [...groups.scan()]
        .filter((g) => g.spaceId === spaceId && (states === null || states.includes(g.state)) && (after === null || byCreated(g, after) > 0))
        .sort(byCreated)
        .slice(0, limit)
        .map((g) => cloneRow(g)),
    addMember: async (m) => {
      const task = await tasks.get(m.spaceId, m.taskId);
      assert(task !== undefined, `member ${m.taskId} has no task`);
      if (task.groupId !== null) return false;
      assert(!members.has(memberKey(m.spaceId, m.taskId)), `task ${m.taskId} has a member row but no groupId`);
      await tasks.update({ ...task, groupId: m.groupId });
      members.set(memberKey(m.spaceId, m.taskId), m);
      return true;
    },
    setVerdict: async (spaceId, groupId, taskId, verdict, atMs) => {
      const m = members.get(memberKey(spaceId, taskId));
      assert(m !== undefined && m.groupId === groupId, `verdict on ${taskId}, not a member of ${groupId}`);
      members.set(memberKey(spaceId, taskId), { ...m, verdict, verdictAt: atMs });
    },
    getMember: async (spaceId, groupId, taskId) => {
      const m = members.get(memberKey(spaceId, taskId));
      return m && m.groupId === groupId ? withTaskState(m) : undefined;
    },
    listMembers: async (spaceId, groupId) => {
      const rows = [...members.scan()].filter((m) => m.spaceId === spaceId && m.groupId === groupId).sort((a, b) => a.position - b.position);
      const out: MemberRow[] = [];
      for (const m of rows) out.push(await withTaskState(structuredClone(m)));
      return out;
    },
    listMembersOf: async (spaceId, groupIds) => {
      const out: MemberRow[] = [];
      for (const groupId of groupIds) out.push(...(await taskGroups.listMembers(spaceId, groupId)));
      return out;
    },
    claimDeadlinePassed: async (nowMs, limit) =>
      [...groups.scan()]
        .filter((g) => g.state !== 'DECIDED' && g.deadline !== null && g.deadline <= nowMs)
        .sort((a, b) => a.deadline! - b.deadline! || byCreated(a, b))
        .slice(0, limit)
        .map((g) => structuredClone(g)),
    scopeSubtree: async (spaceId, scopeId) => scopeSubtree(spaceId, scopeId),
  };
  return { taskGroups, scopeSubtree, gateParentOf };
}
