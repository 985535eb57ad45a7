import { assert } from '../../assert';
import type { JournalEvent } from '../../events/model';
import { isTerminalTask, type Task, type TaskSubscriber } from '../../tasks/model';
import { assertTask } from '../../tasks/rules';
import type { LockOptions } from '../repositories';
import type { TaskRepository } from '../../tasks/repository';
import { MemoryTable } from './table';
import { TransactionRaced } from '../raced';

const key = (spaceId: string, id: string): string => `${spaceId}\u0000${id}`;
const byCreated = (a: Task, b: Task): number => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Tasks in memory; transactions run one at a time, so a lock is a no-op. */
export function memoryTasks(
  undoLog: () => (() => void)[] | undefined,
  events: () => Iterable<JournalEvent>,
  /** The taskId a delivery carries (the messages table is built after this one). */
  taskOfDelivery: (spaceId: string, messageId: string) => Promise<string | null | undefined>,
): { tasks: TaskRepository } {
  const tasks = new MemoryTable<Task>(undoLog);
  const subscribers = new MemoryTable<TaskSubscriber>(undoLog);
  const lock = (_options?: LockOptions): void => undefined;
  const select = (match: (t: Task) => boolean): Task[] => [...tasks.scan()].filter(match).sort(byCreated);
  const subKey = (spaceId: string, taskId: string, subscriberId: string): string => `${spaceId}\u0000${taskId}\u0000${subscriberId}`;

  return {
    tasks: {
      insert: async (t) => {
        assertTask(t);
        if (select((x) => x.spaceId === t.spaceId && x.taskKey === t.taskKey).length > 0) throw new TransactionRaced(`taskKey ${t.taskKey} is taken`);
        assert(!tasks.has(key(t.spaceId, t.id)), `duplicate task ${t.id}`);
        tasks.set(key(t.spaceId, t.id), t);
      },
      get: async (spaceId, id, options) => (lock(options), tasks.get(key(spaceId, id))),
      getByKey: async (spaceId, taskKey) => structuredClone(select((t) => t.spaceId === spaceId && t.taskKey === taskKey)[0]),
      getByKeys: async (spaceId, taskKeys) => {
        const wanted = new Set(taskKeys);
        return select((t) => t.spaceId === spaceId && wanted.has(t.taskKey)).map((t) => structuredClone(t));
      },
      update: async (t) => {
        assertTask(t);
        assert(tasks.has(key(t.spaceId, t.id)), `update of missing task ${t.id}`);
        tasks.set(key(t.spaceId, t.id), t);
      },
      getByDelivery: async (spaceId, messageId) => {
        const taskId = await taskOfDelivery(spaceId, messageId);
        return taskId ? tasks.get(key(spaceId, taskId)) : undefined;
      },
      getByDeliveries: async (spaceId, messageIds) => {
        const found: Task[] = [];
        for (const messageId of new Set(messageIds)) {
          const taskId = await taskOfDelivery(spaceId, messageId);
          const task = taskId ? tasks.get(key(spaceId, taskId)) : undefined;
          if (task) found.push(task);
        }
        return found;
      },
      list: async (spaceId, scopeId, states, after, limit) =>
        select(
          (t) =>
            t.spaceId === spaceId &&
            (scopeId === null || t.scopeId === scopeId) &&
            (states === null || states.includes(t.state)) &&
            (after === null || byCreated(t, { ...t, createdAt: after.createdAt, id: after.id }) > 0),
        )
          .slice(0, limit)
          .map((t) => structuredClone(t)),
      claimDeadlinePassed: async (nowMs, limit) =>
        [...tasks.scan()]
          .filter((t) => (t.state === 'PENDING' || t.state === 'RUNNING') && t.deadline !== null && t.deadline <= nowMs)
          .sort((a, b) => a.deadline! - b.deadline! || byCreated(a, b))
          .slice(0, limit)
          .map((t) => structuredClone(t)),
      tombstoneFinished: async (cutoffs, limit) => {
        const cutoffOf = new Map(cutoffs.map((c) => [c.spaceId, c.cutoffMs]));
        const isDue = (t: Task): boolean => {
          const cutoffMs = cutoffOf.get(t.spaceId);
          return cutoffMs !== undefined && !t.tombstoned && isTerminalTask(t.state) && t.updatedAt <= cutoffMs;
        };
        const due = select(isDue).slice(0, limit);
        for (const t of due) {
          const tombstone: Task = { ...t, input: null, outcome: null, tombstoned: true };
          assertTask(tombstone);
          tasks.set(key(t.spaceId, t.id), tombstone);
        }
        return due.length;
      },
      addSubscriber: async (s) => {
        const k = subKey(s.spaceId, s.taskId, s.subscriberId);
        if (subscribers.has(k)) return false;
        assert(tasks.has(key(s.spaceId, s.taskId)), `subscriber of missing task ${s.taskId}`);
        subscribers.set(k, s);
        return true;
      },
      removeSubscriber: async (spaceId, taskId, subscriberId) => {
        const k = subKey(spaceId, taskId, subscriberId);
        if (!subscribers.has(k)) return false;
        subscribers.delete(k);
        return true;
      },
      listSubscribers: async (spaceId, taskId) =>
        [...subscribers.scan()]
          .filter((s) => s.spaceId === spaceId && s.taskId === taskId)
          .sort((a, b) => a.joinedAt - b.joinedAt || (a.subscriberId < b.subscriberId ? -1 : a.subscriberId > b.subscriberId ? 1 : 0))
          .map((s) => structuredClone(s)),
      listEvents: async (spaceId, taskId, limit) =>
        [...events()]
          .filter((e) => e.spaceId === spaceId && e.aggregateType === 'task' && e.aggregateId === taskId)
          .sort((a, b) => Number(a.eventId) - Number(b.eventId))
          .slice(0, limit)
          .map((e) => structuredClone(e)),
    },
  };
}
