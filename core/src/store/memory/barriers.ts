import { assert } from '../../assert';
import type { Barrier, BarrierArrival, BarrierListPosition } from '../../barriers/model';
import type { BarrierRepository, LockOptions } from '../repositories';
import { MemoryTable } from './table';

const key = (...parts: (string | number)[]): string => parts.join('\u0000');
const byPosition = (a: Barrier, b: Barrier): number => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const isAfter = (b: Barrier, p: BarrierListPosition): boolean => b.createdAt > p.createdAt || (b.createdAt === p.createdAt && b.id > p.id);

/**
 * Barriers and their arrivals in memory. Transactions run one at a time, so a lock is a no-op;
 * the arrival key (space, barrier, epoch, arrivalKey) is the table key, so, as the SQL store's
 * unique key does, a second insert of one arrival fails.
 */
export function memoryBarriers(undoLog: () => (() => void)[] | undefined): BarrierRepository {
  const barriers = new MemoryTable<Barrier>(undoLog);
  const arrivals = new MemoryTable<BarrierArrival>(undoLog);
  const lock = (_options?: LockOptions): void => undefined;
  return {
    insert: async (b) => {
      assert(!barriers.has(key(b.spaceId, b.id)), `duplicate barrier ${b.id}`);
      barriers.set(key(b.spaceId, b.id), b);
    },
    get: async (spaceId, id, options) => (lock(options), barriers.get(key(spaceId, id))),
    list: async (spaceId, states, after, limit) =>
      [...barriers.scan()]
        .filter((b) => b.spaceId === spaceId && (states === null || states.includes(b.state)) && (after === null || isAfter(b, after)))
        .sort(byPosition)
        .slice(0, limit)
        .map((b) => structuredClone(b)),
    update: async (b) => {
      assert(barriers.has(key(b.spaceId, b.id)), `update of missing barrier ${b.id}`);
      barriers.set(key(b.spaceId, b.id), b);
    },
    insertArrival: async (a) => {
      const k = key(a.spaceId, a.barrierId, a.epoch, a.arrivalKey);
      assert(!arrivals.has(k), `arrival ${a.arrivalKey} already counted in epoch ${a.epoch} of barrier ${a.barrierId}`);
      arrivals.set(k, a);
    },
    getArrival: async (spaceId, barrierId, epoch, arrivalKey) => arrivals.get(key(spaceId, barrierId, epoch, arrivalKey)),
    countArrivals: async (spaceId, barrierId, epoch) => {
      let n = 0;
      for (const a of arrivals.scan()) if (a.spaceId === spaceId && a.barrierId === barrierId && a.epoch === epoch) n++;
      return n;
    },
  };
}
