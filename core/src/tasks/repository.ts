import type { JournalEvent } from '../events/model';
import type { Task, TaskListPosition, TaskState, TaskSubscriber } from './model';
import type { LockOptions } from '../store/lock-options';
import type { SpaceCutoff } from '../store/retention-repository';

/** Tasks and their subscribers (core/src/tasks). */
export interface TaskRepository {
  /**
   * Inserts a task whose taskKey this transaction looked up and found free. A write that rides
   * with the COMMIT: when a concurrent submit of the key committed first, the transaction fails
   * with TransactionRaced (store/raced.ts) and the store runs it again, where the lookup finds
   * the winner and the submit answers as a join.
   */
  insert(task: Task): Promise<void>;
  get(spaceId: string, id: string, options?: LockOptions): Promise<Task | undefined>;
  getByKey(spaceId: string, taskKey: string): Promise<Task | undefined>;
  /** getByKey for several keys in one statement: the tasks of the space whose taskKey is one of them. */
  getByKeys(spaceId: string, taskKeys: readonly string[]): Promise<Task[]>;
  /**
   * The task whose delivery is `messageId`, unlocked. Read after the caller took the delivery's
   * row lock (which every writer of a task's state takes first), it is the task as it stays
   * until commit, all but its groupId: a join-task locks the task, not its delivery, and may
   * commit meanwhile (update refuses what such a read wrote). Sent in the same pipeline as that
   * lock, it costs no round trip of its own.
   */
  getByDelivery(spaceId: string, messageId: string): Promise<Task | undefined>;
  /** getByDelivery for several deliveries in one statement: the tasks whose delivery is one of `messageIds`. */
  getByDeliveries(spaceId: string, messageIds: readonly string[]): Promise<Task[]>;
  /**
   * Writes the task's state, attempts, outcome, failureReason, messageId and updatedAt. On a store
   * with concurrent transactions, a task whose groupId is no longer `task.groupId` (it joined a
   * group since it was read) fails the transaction as a lost race, which runs again: its end must
   * tell the group it now has (docs/lock-order.md, "Task groups").
   */
  update(task: Task): Promise<void>;
  /** Tasks in (createdAt, id) order after `after` (exclusive), optionally of one scope and in any of `states`. */
  list(spaceId: string, scopeId: string | null, states: readonly TaskState[] | null, after: TaskListPosition | null, limit: number): Promise<Task[]>;
  /**
   * PENDING or RUNNING tasks of any space whose deadline is at or before `nowMs`, earliest first,
   * locked for this transaction together with their delivery message (message first in the lock
   * order). Rows another transaction holds are skipped (SKIP LOCKED): the sweep never waits.
   */
  claimDeadlinePassed(nowMs: number, limit: number): Promise<Task[]>;
  /**
   * Retention (docs/design/0017-retention.md): tombstones up to `limit` finished tasks of the given spaces that
   * finished (were last updated) at or before their space's cutoff and are not tombstoned yet:
   * input and outcome cleared, state and failureReason kept. Says how many. PENDING and RUNNING
   * tasks are never touched. Rows another transaction holds are skipped (SKIP LOCKED), so sweeps
   * on several servers never wait on each other or on a request.
   */
  tombstoneFinished(cutoffs: readonly SpaceCutoff[], limit: number): Promise<number>;
  /** False, writing nothing, when the subscriber is already subscribed. */
  addSubscriber(subscriber: TaskSubscriber): Promise<boolean>;
  /** False when the subscriber was not subscribed. */
  removeSubscriber(spaceId: string, taskId: string, subscriberId: string): Promise<boolean>;
  /** Subscribers in join order (joinedAt, subscriberId). */
  listSubscribers(spaceId: string, taskId: string): Promise<TaskSubscriber[]>;
  /** Journal events whose aggregate is this task, in journal order (the debugger view). */
  listEvents(spaceId: string, taskId: string, limit: number): Promise<JournalEvent[]>;
}
