import type { GroupListPosition, GroupMember, GroupState, MemberRow, TaskGroup, Verdict } from './model';
import type { LockOptions } from '../store/lock-options';

/**
 * Task groups and their members (core/src/groups). The group row is the lock every decision
 * takes: whatever can change a group's decision (a member joining, a verdict, a seal, a member
 * task reaching a terminal state, the deadline) locks it first among the group's rows, so one
 * transaction at a time evaluates the rule and the outcome is set once (docs/lock-order.md).
 */
export interface TaskGroupRepository {
  insert(group: TaskGroup): Promise<void>;
  get(spaceId: string, id: string, options?: LockOptions): Promise<TaskGroup | undefined>;
  update(group: TaskGroup): Promise<void>;
  /** Groups in (createdAt, id) order after `after` (exclusive), in any of `states` (any state when null). */
  list(spaceId: string, states: readonly GroupState[] | null, after: GroupListPosition | null, limit: number): Promise<TaskGroup[]>;
  /**
   * Adds a member row and writes groupId onto its task, only when the task is a member of no
   * group yet (the task row's groupId is null): false, writing nothing, otherwise. The task must
   * exist.
   */
  addMember(member: GroupMember): Promise<boolean>;
  /** Writes a member's verdict and verdictAt. */
  setVerdict(spaceId: string, groupId: string, taskId: string, verdict: Verdict, atMs: number): Promise<void>;
  /** One member, or undefined when the task is not a member of this group. */
  getMember(spaceId: string, groupId: string, taskId: string): Promise<MemberRow | undefined>;
  /** Every member with its task's state, in join order: what a decision reads (one statement in SQL). */
  listMembers(spaceId: string, groupId: string): Promise<MemberRow[]>;
  /** The members of several groups, each group's in join order: a page of the group list in one statement. */
  listMembersOf(spaceId: string, groupIds: readonly string[]): Promise<MemberRow[]>;
  /**
   * Undecided groups of any space whose deadline is at or before `nowMs`, earliest first, locked
   * for this transaction. Rows another transaction holds are skipped (SKIP LOCKED).
   */
  claimDeadlinePassed(nowMs: number, limit: number): Promise<TaskGroup[]>;
  /**
   * `scopeId` and every group gate scope below it at any depth (a gate scope is a child of its
   * group's parentScopeId), `scopeId` first: the subtree a watch's scopeId filter matches.
   */
  scopeSubtree(spaceId: string, scopeId: string): Promise<string[]>;
}
