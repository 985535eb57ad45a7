import type { DeliveryRequirements } from '../admission/model';
import type { WaitLineCensus } from '../allowances/model';
import type { MailboxCensus, MessageState } from '../messages/model';
import type { Task, TaskListPosition } from '../tasks/model';
import type { BarrierWait, CensusResourceType, RunResourceType, StateCount } from './model';

/** The fields of a task a diagnostics view shows and explains, without its input or outcome (which may be large). */
export type TaskSummary = Pick<Task, 'id' | 'taskKey' | 'state' | 'mailboxId' | 'scopeId' | 'messageId' | 'createdAt'>;

/** A task's delivery as diagnostics reads it: its state, its lease, and what admission must claim; never its payload. */
export interface DeliverySummary {
  messageId: string;
  taskId: string | null;
  mailboxId: string;
  scopeId: string;
  state: MessageState;
  attempt: number;
  requirements: DeliveryRequirements | null;
  holder: string | null;
  holderSession: string | null;
  leaseExpiresAt: number | null;
  createdAt: number;
}

/**
 * The reads of the diagnostics views (docs/design/0018-diagnostics.md), one space at a time. Never used by an
 * operation. Each read is bounded: counts stop at `cap` rows, lists at `limit`. The SQL store
 * names the index each one walks (server/src/store/sql/repositories/diagnostics.ts).
 */
export interface DiagnosticsRepository {
  /**
   * Every resource of the space by type and state: for each type, its rows are counted up to
   * `cap` (so a type's counts summing to `cap` means "cap or more"). A type without states is
   * counted with state null. No count is 0: a type or state with no rows is left out.
   */
  census(spaceId: string, cap: number): Promise<StateCount<CensusResourceType>[]>;
  /**
   * Mailboxes of the space in name order after `afterName` (exclusive), at most `limit`, each
   * with its READY, CLAIMED and DEAD counts (READY and CLAIMED read together up to `cap`, DEAD
   * up to `cap`) and the createdAt of its oldest READY message among those read. Mailboxes
   * holding none are listed too.
   */
  backlog(spaceId: string, afterName: string | null, limit: number, cap: number): Promise<MailboxCensus[]>;
  /**
   * The space's allowance wait lines (allowances with WAITING waiters), each with its WAITING
   * count and its oldest waiter's createdAt, from at most `cap` waiters in all, read in line
   * order: a line that is listed has its true oldest waiter; lines past the cap are left out.
   */
  waitLines(spaceId: string, cap: number): Promise<WaitLineCensus[]>;
  /** WAITING barriers oldest first, at most `limit`, each with up to `arrivalLimit` arrivalKeys of its current epoch. */
  waitingBarriers(spaceId: string, limit: number, arrivalLimit: number): Promise<BarrierWait[]>;
  /** READY task deliveries that have requirements (the ones admission can find short), oldest (send order) first, at most `limit`. */
  gatedDeliveries(spaceId: string, limit: number): Promise<DeliverySummary[]>;
  /** The deliveries of `messageIds` that exist, in any order. */
  deliveries(spaceId: string, messageIds: readonly string[]): Promise<DeliverySummary[]>;
  /** The tasks of `ids` that exist, in any order. */
  taskSummaries(spaceId: string, ids: readonly string[]): Promise<TaskSummary[]>;
  /** Tasks of `scopeId` in any state, in (createdAt, id) order after `after` (exclusive), at most `limit`. */
  scopeTasks(spaceId: string, scopeId: string, after: TaskListPosition | null, limit: number): Promise<TaskSummary[]>;
  /** Those of `allowanceIds` whose FIFO line holds at least one WAITING waiter. */
  allowancesWithWaiters(spaceId: string, allowanceIds: readonly string[]): Promise<string[]>;
  /**
   * What lives under `scopeId`, by type and state: its tasks, the task groups created under it
   * (parentScopeId), and its reservations, each type counted up to `cap`. No count is 0:
   * nothing under the scope answers an empty list.
   */
  runCounts(spaceId: string, scopeId: string, cap: number): Promise<StateCount<RunResourceType>[]>;
}
