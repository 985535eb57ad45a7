import type { TaskState } from '../tasks/model';

/**
 * Task groups as stored (docs/design/0010-task-groups.md): a coordinator's fan-out that decides once. Times are
 * epoch ms from the injected clock.
 */
export const groupStates = ['OPEN', 'SEALED', 'DECIDED'] as const;
export type GroupState = (typeof groupStates)[number];

export const groupConditions = ['FIRST_ACCEPTED', 'N_ACCEPTED', 'ALL_TERMINAL'] as const;
export type GroupCondition = (typeof groupConditions)[number];

export const groupOutcomes = ['SUCCEEDED', 'FAILED'] as const;
export type GroupOutcome = (typeof groupOutcomes)[number];

export const outcomeReasons = ['THRESHOLD_MET', 'ALL_TERMINAL', 'THRESHOLD_UNREACHABLE', 'DEADLINE_EXCEEDED'] as const;
export type OutcomeReason = (typeof outcomeReasons)[number];

export const verdicts = ['PENDING', 'ACCEPTED', 'REJECTED'] as const;
export type Verdict = (typeof verdicts)[number];

/** Spec limits: members per task group, and the threshold's bounds. */
export const maxGroupMembers = 100;
export const maxGroupThreshold = 1_000;

/** Why membership closed (group.sealed): a close or seal call, or expectedMembers (or the 100-member cap) reached. */
export const sealCauses = ['CLOSE', 'SEAL', 'EXPECTED_MEMBERS', 'MAX_MEMBERS'] as const;
export type SealCause = (typeof sealCauses)[number];

/** Why a member task was cancelled by its group's decision (task.cancelled reason). */
export const groupDecidedReason = 'GROUP_DECIDED';

export interface TaskGroup {
  id: string;
  spaceId: string;
  /** The gate scope: member tasks run in it; a child of parentScopeId when that is set. */
  scopeId: string;
  parentScopeId: string | null;
  mailboxId: string;
  condition: GroupCondition;
  /** Accepted members needed: 1 for FIRST_ACCEPTED, given for N_ACCEPTED, null for ALL_TERMINAL. */
  threshold: number | null;
  expectedMembers: number | null;
  deadline: number | null;
  /** OPEN takes members; SEALED does not (membership closed), undecided; DECIDED is final. */
  state: GroupState;
  outcome: GroupOutcome | null;
  outcomeReason: OutcomeReason | null;
  /** Members joined so far: the number of member rows. */
  memberCount: number;
  decidedAt: number | null;
  createdAt: number;
  updatedAt: number;
}

/** One member. A task is a member of at most one group ((spaceId, taskId) is unique). */
export interface GroupMember {
  spaceId: string;
  groupId: string;
  taskId: string;
  /** Join order, from 1: the view lists members in it. */
  position: number;
  verdict: Verdict;
  joinedAt: number;
  verdictAt: number | null;
}

/** A member as a decision sees it: its verdict and its task's state, read under the group's lock. */
export interface MemberStanding {
  taskId: string;
  verdict: Verdict;
  taskState: TaskState;
}

/** A member row with its task's state, as the store reads them together. */
export type MemberRow = GroupMember & Pick<MemberStanding, 'taskState'>;

export interface GroupDecision {
  outcome: GroupOutcome;
  outcomeReason: OutcomeReason;
}

/** Position in the group list, which is ordered by (createdAt, id). */
export interface GroupListPosition {
  createdAt: number;
  id: string;
}
