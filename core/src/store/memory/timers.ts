import { assert } from '../../assert';
import type { Timer, TimerListPosition, TimerState } from '../../timers/model';
import type { TimerRepository } from '../../timers/repository';
import type { LockOptions } from '../lock-options';
import { MemoryTable } from './table';

const key = (spaceId: string, id: string): string => `${spaceId}\u0000${id}`;
const compareIds = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const byPosition = (a: Timer, b: Timer): number => a.createdAt - b.createdAt || compareIds(a.id, b.id);
const byDue = (a: Timer, b: Timer): number => a.dueAt - b.dueAt || compareIds(a.spaceId, b.spaceId) || compareIds(a.id, b.id);
const isAfter = (t: Timer, p: TimerListPosition): boolean => t.createdAt > p.createdAt || (t.createdAt === p.createdAt && t.id > p.id);

/**
 * Timers in memory. Transactions run one at a time, so a lock is a no-op and a claimed due
 * timer cannot be claimed by another sweep before this one's transaction ends. The timerKey
 * index is a second table, so, as the SQL store's unique key does, a second insert of a key
 * writes nothing.
 */
export function memoryTimers(undoLog: () => (() => void)[] | undefined): TimerRepository {
  const timers = new MemoryTable<Timer>(undoLog);
  const idByKey = new MemoryTable<string>(undoLog);
  const lock = (_options?: LockOptions): void => undefined;
  const select = (match: (t: Timer) => boolean, order: (a: Timer, b: Timer) => number, limit: number): Timer[] =>
    [...timers.scan()].filter(match).sort(order).slice(0, limit).map((t) => structuredClone(t));
  return {
    insert: async (t) => {
      if (idByKey.has(key(t.spaceId, t.timerKey))) return false;
      assert(!timers.has(key(t.spaceId, t.id)), `duplicate timer ${t.id}`);
      timers.set(key(t.spaceId, t.id), t);
      idByKey.set(key(t.spaceId, t.timerKey), t.id);
      return true;
    },
    get: async (spaceId, id, options) => (lock(options), timers.get(key(spaceId, id))),
    getByKey: async (spaceId, timerKey) => {
      const id = idByKey.get(key(spaceId, timerKey));
      return id === undefined ? undefined : timers.get(key(spaceId, id));
    },
    list: async (spaceId, filter, after, limit) =>
      select(
        (t) => t.spaceId === spaceId && (filter.states === null || filter.states.includes(t.state)) && (filter.scopeId === null || t.scopeId === filter.scopeId) && (after === null || isAfter(t, after)),
        byPosition,
        limit,
      ),
    update: async (t) => {
      const stored = timers.get(key(t.spaceId, t.id));
      assert(stored, `update of missing timer ${t.id}`);
      assert(stored.state === 'ARMED', `timer ${t.id}: update of a ${stored.state} timer (to ${t.state})`);
      timers.set(key(t.spaceId, t.id), t);
    },
    countArmed: async (spaceId, cap) => {
      let n = 0;
      for (const t of timers.scan()) if (t.spaceId === spaceId && t.state === 'ARMED' && ++n >= cap) break;
      return n;
    },
    countByState: async (spaceId, scopeId) => {
      const counts = new Map<TimerState, number>();
      for (const t of timers.scan()) if (t.spaceId === spaceId && t.scopeId === scopeId) counts.set(t.state, (counts.get(t.state) ?? 0) + 1);
      return [...counts].map(([state, count]) => ({ state, count }));
    },
    claimDue: async (nowMs, limit) => select((t) => t.state === 'ARMED' && t.dueAt <= nowMs, byDue, limit),
    lockArmedInScopes: async (spaceId, scopeIds, limit) => select((t) => t.spaceId === spaceId && t.state === 'ARMED' && scopeIds.includes(t.scopeId), (a, b) => compareIds(a.id, b.id), limit),
  };
}
