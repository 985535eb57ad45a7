import { assert } from '../../assert';
import type { Allowance, AllowanceWaiter, Consumption, WaitLineCensus } from '../../allowances/model';
import type { AllowanceRepository, AllowanceWaiterRepository, ConsumptionRepository } from '../../allowances/repository';
import type { MemoryTable } from './table';

const key = (spaceId: string, id: string): string => `${spaceId}\u0000${id}`;

export interface AllowanceTables {
  allowances: MemoryTable<Allowance>;
  waiters: MemoryTable<AllowanceWaiter>;
  consumptions: MemoryTable<Consumption>;
}

/** The allowance repositories over memory tables; transactions are the store's (exclusive). */
export function memoryAllowances(t: AllowanceTables): {
  allowances: AllowanceRepository;
  allowanceWaiters: AllowanceWaiterRepository;
  consumptions: ConsumptionRepository;
} {
  const byName = (spaceId: string, name: string): Allowance | undefined => {
    for (const a of t.allowances.scan()) if (a.spaceId === spaceId && a.name === name) return structuredClone(a);
    return undefined;
  };
  return {
    allowances: {
      insert: async (a) => {
        assert(!byName(a.spaceId, a.name), `allowance name ${a.name} taken`);
        assert(!t.allowances.has(key(a.spaceId, a.id)), `duplicate allowance ${a.id}`);
        t.allowances.set(key(a.spaceId, a.id), a);
      },
      get: async (spaceId, id) => t.allowances.get(key(spaceId, id)),
      getByName: async (spaceId, name) => byName(spaceId, name),
      list: async (spaceId, afterName, limit) =>
        [...t.allowances.scan()]
          .filter((a) => a.spaceId === spaceId && (afterName === null || a.name > afterName))
          .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
          .slice(0, limit)
          .map((a) => structuredClone(a)),
      update: async (a) => {
        assert(t.allowances.has(key(a.spaceId, a.id)), `update of missing allowance ${a.id}`);
        t.allowances.set(key(a.spaceId, a.id), a);
      },
      claimDue: async (nowMs, limit) =>
        [...t.allowances.scan()]
          .filter((a) => a.wakeAt !== null && a.wakeAt <= nowMs)
          .sort((a, b) => a.wakeAt! - b.wakeAt! || (a.id < b.id ? -1 : 1))
          .slice(0, limit)
          .map((a) => structuredClone(a)),
    },
    allowanceWaiters: {
      insert: async (w) => {
        assert(!t.waiters.has(key(w.spaceId, w.id)), `duplicate waiter ${w.id}`);
        t.waiters.set(key(w.spaceId, w.id), w);
      },
      get: async (spaceId, id) => t.waiters.get(key(spaceId, id)),
      update: async (w) => {
        assert(t.waiters.has(key(w.spaceId, w.id)), `update of missing waiter ${w.id}`);
        t.waiters.set(key(w.spaceId, w.id), w);
      },
      listWaiting: async (spaceId, allowanceId, limit) =>
        [...t.waiters.scan()]
          .filter((w) => w.spaceId === spaceId && w.allowanceId === allowanceId && w.state === 'WAITING')
          .sort((a, b) => a.position - b.position)
          .slice(0, limit)
          .map((w) => structuredClone(w)),
      countWaiting: async (spaceId, allowanceId) => {
        let n = 0;
        for (const w of t.waiters.scan()) if (w.spaceId === spaceId && w.allowanceId === allowanceId && w.state === 'WAITING') n++;
        return n;
      },
      countWaitingInSpace: async (spaceId) => {
        let n = 0;
        for (const w of t.waiters.scan()) if (w.spaceId === spaceId && w.state === 'WAITING') n++;
        return n;
      },
      censusLines: async (limit) => {
        const lines = new Map<string, WaitLineCensus>();
        for (const w of t.waiters.scan()) {
          if (w.state !== 'WAITING') continue;
          const k = key(w.spaceId, w.allowanceId);
          const line = lines.get(k);
          if (line) {
            line.waiting++;
            line.oldestWaitingAt = Math.min(line.oldestWaitingAt, w.createdAt);
            continue;
          }
          const allowance = t.allowances.get(k);
          assert(allowance, `waiter ${w.id} of missing allowance ${w.allowanceId}`);
          lines.set(k, { spaceId: w.spaceId, allowanceId: w.allowanceId, allowanceName: allowance.name, waiting: 1, oldestWaitingAt: w.createdAt });
        }
        const byKey = (a: WaitLineCensus, b: WaitLineCensus): number => (key(a.spaceId, a.allowanceId) < key(b.spaceId, b.allowanceId) ? -1 : 1);
        return [...lines.values()].sort((a, b) => b.waiting - a.waiting || byKey(a, b)).slice(0, limit);
      },
    },
    consumptions: {
      insert: async (c) => {
        const k = key(c.spaceId, c.id);
        assert(!t.consumptions.has(k), `duplicate consumption ${c.id}`);
        if (c.workKey !== null) {
          for (const x of t.consumptions.scan()) assert(!(x.spaceId === c.spaceId && x.allowanceId === c.allowanceId && x.workKey === c.workKey), `consumption workKey ${c.workKey} taken`);
        }
        t.consumptions.set(k, c);
      },
      getByWorkKey: async (spaceId, allowanceId, workKey) => {
        for (const c of t.consumptions.scan()) if (c.spaceId === spaceId && c.allowanceId === allowanceId && c.workKey === workKey) return structuredClone(c);
        return undefined;
      },
    },
  };
}
