import { assert } from '../assert';
import { conflict } from '../errors';
import { isTerminalTask, type TaskState } from '../tasks/model';
import { maxGroupMembers, type GroupDecision, type MemberStanding, type TaskGroup, type Verdict } from './model';

/**
 * The decision rule of docs/design/0010-task-groups.md, a pure function of the group and its members as read under
 * the group's row lock. A group decides the moment its condition is met or can no longer be
 * met; the caller applies the answer in the same transaction as the change that made it so.
 *
 * - A passed deadline decides first: FAILED DEADLINE_EXCEEDED (it happened before whatever the
 *   caller is doing now).
 * - ALL_TERMINAL: SUCCEEDED once membership is closed and every member is terminal (also with no
 *   members at all: nothing is left to wait for).
 * - FIRST_ACCEPTED / N_ACCEPTED: SUCCEEDED THRESHOLD_MET at `threshold` ACCEPTED verdicts, open
 *   membership or not. FAILED THRESHOLD_UNREACHABLE once the accepted, plus the members that
 *   could still be accepted (no verdict yet, task live or SUCCEEDED), plus the members that can
 *   still join (none once membership is closed, else up to expectedMembers or 100) fall short.
 *
 * Undefined: undecided. Asking about a DECIDED group is a bug: its outcome is set once.
 */
export function decide(group: TaskGroup, members: readonly MemberStanding[], nowMs: number): GroupDecision | undefined {
  assert(group.state !== 'DECIDED', `group ${group.id}: asked to decide again`);
  assert(members.length === group.memberCount, `group ${group.id}: ${members.length} member rows, memberCount ${group.memberCount}`);
  if (group.deadline !== null && nowMs >= group.deadline) return { outcome: 'FAILED', outcomeReason: 'DEADLINE_EXCEEDED' };
  const closed = group.state === 'SEALED';
  if (group.condition === 'ALL_TERMINAL') {
    return closed && members.every((m) => isTerminalTask(m.taskState)) ? { outcome: 'SUCCEEDED', outcomeReason: 'ALL_TERMINAL' } : undefined;
  }
  const threshold = group.threshold!;
  const accepted = members.filter((m) => m.verdict === 'ACCEPTED').length;
  if (accepted >= threshold) return { outcome: 'SUCCEEDED', outcomeReason: 'THRESHOLD_MET' };
  const stillPossible = members.filter((m) => m.verdict === 'PENDING' && canStillSucceed(m.taskState)).length;
  const stillToJoin = closed ? 0 : membershipCap(group) - group.memberCount;
  return accepted + stillPossible + stillToJoin < threshold ? { outcome: 'FAILED', outcomeReason: 'THRESHOLD_UNREACHABLE' } : undefined;
}

/** Accept needs SUCCEEDED: a live task may yet get there, a FAILED, CANCELLED or EXPIRED one never. */
const canStillSucceed = (state: TaskState): boolean => state === 'SUCCEEDED' || !isTerminalTask(state);

/** Members after which membership closes by itself: expectedMembers, else the 100-member cap. */
export const membershipCap = (group: Pick<TaskGroup, 'expectedMembers'>): number => group.expectedMembers ?? maxGroupMembers;

/**
 * A verdict on a member: accept needs a SUCCEEDED task, reject a terminal one (CONFLICT naming
 * the state otherwise). The same verdict again changes nothing (idempotent: false); a verdict is
 * final, so the other one is CONFLICT. True when the verdict is new.
 */
export function checkVerdict(current: Verdict, wanted: Exclude<Verdict, 'PENDING'>, taskId: string, taskState: TaskState): boolean {
  if (current === wanted) return false;
  if (current !== 'PENDING') throw conflict(`member ${taskId} is already ${current}; a verdict is final`);
  if (wanted === 'ACCEPTED' && taskState !== 'SUCCEEDED') throw conflict(`member ${taskId} is ${taskState}; only a SUCCEEDED member can be accepted`);
  if (wanted === 'REJECTED' && !isTerminalTask(taskState)) throw conflict(`member ${taskId} is ${taskState}; only a terminal member can be rejected`);
  return true;
}

/** The invariants of a stored group; every write in both stores checks them. */
export function assertGroup(g: TaskGroup): void {
  assert(Number.isSafeInteger(g.memberCount) && g.memberCount >= 0 && g.memberCount <= membershipCap(g), `group ${g.id}: memberCount ${g.memberCount}`);
  if (g.state === 'OPEN') assert(g.memberCount < membershipCap(g), `group ${g.id}: OPEN with a full membership`);
  assert((g.state === 'DECIDED') === (g.outcome !== null && g.outcomeReason !== null && g.decidedAt !== null), `group ${g.id}: ${g.state} with outcome ${g.outcome}`);
  if (g.condition === 'FIRST_ACCEPTED') assert(g.threshold === 1, `group ${g.id}: FIRST_ACCEPTED with threshold ${g.threshold}`);
  if (g.condition === 'N_ACCEPTED') assert(g.threshold !== null && g.threshold >= 1, `group ${g.id}: N_ACCEPTED without a threshold`);
  if (g.condition === 'ALL_TERMINAL') assert(g.threshold === null, `group ${g.id}: ALL_TERMINAL with a threshold`);
}
