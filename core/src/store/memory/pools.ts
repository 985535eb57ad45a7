import { assert } from '../../assert';
import type { Pool, WorkLimit } from '../../pools/model';
import { assertCapacityUnits, assertPool, assertWorkLimit, claimUnits, limitOfPool, limitOfWorkLimit, releaseUnits } from '../../pools/rules';
import type { CapacityRepository, PoolRepository, WorkLimitRepository } from '../repositories';
import { MemoryTable } from './table';

export interface PoolTables {
  pools: MemoryTable<Pool>;
  workLimits: MemoryTable<WorkLimit>;
}

/**
 * Pools and work limits in memory. Transactions already run one at a time, so a claim is a
 * read, the core rule and a write; the SQL store does the same in one UPDATE. Both go through
 * claimUnits/releaseUnits semantics, so the stores cannot disagree on what fits.
 */
export function memoryPools(tables: PoolTables): { pools: PoolRepository; workLimits: WorkLimitRepository } {
  return {
    pools: capacityRepository(tables.pools, limitOfPool, assertPool),
    workLimits: capacityRepository(tables.workLimits, limitOfWorkLimit, assertWorkLimit),
  };
}

interface Row {
  id: string;
  spaceId: string;
  name: string;
  inUse: number;
  updatedAt: number;
}

const key = (spaceId: string, id: string): string => `${spaceId}\u0000${id}`;
const byName = (a: Row, b: Row): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

function capacityRepository<T extends Row>(table: MemoryTable<T>, limitOf: (row: T) => number, check: (row: T) => void): CapacityRepository<T> {
  const findByName = (spaceId: string, name: string): T | undefined => {
    for (const row of table.scan()) if (row.spaceId === spaceId && row.name === name) return structuredClone(row);
    return undefined;
  };
  const write = (row: T): T => {
    check(row);
    table.set(key(row.spaceId, row.id), row);
    return row;
  };
  return {
    insert: async (row) => {
      if (findByName(row.spaceId, row.name)) return false;
      assert(!table.has(key(row.spaceId, row.id)), `duplicate key ${row.id}`);
      write(row);
      return true;
    },
    get: async (spaceId, id) => table.get(key(spaceId, id)),
    getByName: async (spaceId, name) => findByName(spaceId, name),
    list: async (spaceId, afterName, limit) =>
      [...table.scan()]
        .filter((row) => row.spaceId === spaceId && (afterName === null || row.name > afterName))
        .sort(byName)
        .slice(0, limit)
        .map((row) => structuredClone(row)),
    claim: async (spaceId, id, units, nowMs) => {
      assertCapacityUnits(units); // before the lookup, as the SQL store does
      const row = table.get(key(spaceId, id));
      const next = row && claimUnits(row, limitOf(row), units, nowMs);
      return next && write(next);
    },
    release: async (spaceId, id, units, nowMs) => {
      assertCapacityUnits(units);
      const row = table.get(key(spaceId, id));
      assert(row, `release of ${units} units from missing ${id}`);
      return write(releaseUnits(row, units, nowMs));
    },
  };
}
