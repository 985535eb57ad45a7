import { assert } from '../../assert';
import type { OrgLoad, UsageRepository } from '../../usage/repository';
import { MemoryTable } from './table';

interface MonthOperations {
  orgId: string;
  month: string;
  operations: number;
}

interface MinuteRequests {
  serverId: string;
  orgId: string;
  minute: number;
  requests: number;
}

/**
 * Usage in memory: the same records as the SQL store's (migration 021). `loadOf` is handed in
 * because it counts other tables (messages, pools, spaces) that the memory store owns.
 */
export function memoryUsage(log: () => (() => void)[] | undefined, loadOf: (orgIds: readonly string[], nowMs: number) => Promise<Map<string, OrgLoad>>): UsageRepository {
  const months = new MemoryTable<MonthOperations>(log);
  const minutes = new MemoryTable<MinuteRequests>(log);
  const monthKey = (orgId: string, month: string): string => `${orgId}\u0000${month}`;
  const minuteKey = (serverId: string, orgId: string, minute: number): string => `${serverId}\u0000${orgId}\u0000${minute}`;
  const purge = <V>(table: MemoryTable<V>, keyOf: (row: V) => string, old: (row: V) => boolean, limit: number): number => {
    const due = [...table.scan()].filter(old).slice(0, limit);
    for (const row of due) table.delete(keyOf(row));
    return due.length;
  };
  return {
    addOperations: async (month, operationsByOrg) => {
      const totals = new Map<string, number>();
      for (const [orgId, operations] of operationsByOrg) {
        assert(Number.isInteger(operations) && operations > 0, `operations to add must be a positive integer, not ${operations}`);
        const before = months.get(monthKey(orgId, month))?.operations ?? 0;
        months.set(monthKey(orgId, month), { orgId, month, operations: before + operations });
        totals.set(orgId, before + operations);
      }
      return totals;
    },
    operationsOf: async (month, orgIds) => {
      const totals = new Map<string, number>();
      for (const orgId of orgIds) {
        const row = months.get(monthKey(orgId, month));
        if (row) totals.set(orgId, row.operations);
      }
      return totals;
    },
    putRequestCounts: async (serverId, minute, requestsByOrg) => {
      for (const [orgId, requests] of requestsByOrg) minutes.set(minuteKey(serverId, orgId, minute), { serverId, orgId, minute, requests });
    },
    requestCountsOfOthers: async (serverId, minute) => {
      const totals = new Map<string, number>();
      for (const row of minutes.scan()) {
        if (row.minute === minute && row.serverId !== serverId) totals.set(row.orgId, (totals.get(row.orgId) ?? 0) + row.requests);
      }
      return totals;
    },
    purgeRequestCountsBefore: async (minute, limit) => purge(minutes, (r) => minuteKey(r.serverId, r.orgId, r.minute), (r) => r.minute < minute, limit),
    purgeOperationsBefore: async (month, limit) => purge(months, (r) => monthKey(r.orgId, r.month), (r) => r.month < month, limit),
    loadOf: (orgIds, nowMs) => loadOf(orgIds, nowMs),
  };
}
