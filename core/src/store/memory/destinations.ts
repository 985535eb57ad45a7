import { assert } from '../../assert';
import type { DeliveryAttempt, Destination } from '../../destinations/model';
import type { DeliveryAttemptRepository, DestinationRepository } from '../../destinations/repository';
import { MemoryTable } from './table';

const key = (spaceId: string, id: string): string => `${spaceId}\u0000${id}`;
const byCreated = (a: Destination, b: Destination): number => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const byRecentFirst = (a: DeliveryAttempt, b: DeliveryAttempt): number => b.attemptedAt - a.attemptedAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/**
 * Destinations and delivery attempts in memory. Transactions run one at a time, so a claim is
 * a scan and a write; the SQL store claims with FOR UPDATE SKIP LOCKED.
 */
export function memoryDestinations(log: () => (() => void)[] | undefined): { destinations: DestinationRepository; deliveryAttempts: DeliveryAttemptRepository } {
  const destinations = new MemoryTable<Destination>(log);
  const attempts = new MemoryTable<DeliveryAttempt>(log);
  return {
    destinations: {
      insert: async (row) => {
        assert(!destinations.has(key(row.spaceId, row.id)), `duplicate destination ${row.id}`);
        destinations.set(key(row.spaceId, row.id), row);
      },
      get: async (spaceId, id) => destinations.get(key(spaceId, id)),
      list: async (spaceId, after, limit) =>
        [...destinations.scan()]
          .filter((d) => d.spaceId === spaceId && (after === null || d.createdAt > after.createdAt || (d.createdAt === after.createdAt && d.id > after.id)))
          .sort(byCreated)
          .slice(0, limit)
          .map((d) => structuredClone(d)),
      delete: async (spaceId, id) => {
        if (!destinations.has(key(spaceId, id))) return false;
        destinations.delete(key(spaceId, id));
        return true;
      },
      claimDue: async (nowMs, leaseToken, leaseExpiresAt, limit) => {
        const due = [...destinations.scan()]
          .filter((d) => d.state === 'ACTIVE' && d.nextAttemptAt <= nowMs && (d.leaseExpiresAt === null || d.leaseExpiresAt <= nowMs))
          .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || (a.id < b.id ? -1 : 1))
          .slice(0, limit);
        return due.map((d) => {
          const leased = { ...structuredClone(d), leaseToken, leaseExpiresAt };
          destinations.set(key(d.spaceId, d.id), leased);
          return leased;
        });
      },
      settle: async (spaceId, id, leaseToken, progress) => {
        const row = destinations.get(key(spaceId, id));
        if (!row || row.leaseToken !== leaseToken) return false;
        destinations.set(key(spaceId, id), { ...row, ...progress });
        return true;
      },
      resume: async (spaceId, id, nowMs) => {
        const row = destinations.get(key(spaceId, id));
        if (!row || row.state !== 'PAUSED') return undefined;
        const resumed: Destination = {
          ...row,
          state: 'ACTIVE',
          consecutiveFailures: 0,
          failingSince: null,
          pausedAt: null,
          pausedReason: null,
          nextAttemptAt: nowMs,
          updatedAt: nowMs,
        };
        destinations.set(key(spaceId, id), resumed);
        return resumed;
      },
    },
    deliveryAttempts: {
      insert: async (row) => {
        assert(!attempts.has(key(row.spaceId, row.id)), `duplicate delivery attempt ${row.id}`);
        attempts.set(key(row.spaceId, row.id), row);
      },
      list: async (spaceId, filter, before, limit) =>
        [...attempts.scan()]
          .filter(
            (a) =>
              a.spaceId === spaceId &&
              (filter.destinationId === undefined || a.destinationId === filter.destinationId) &&
              (filter.eventId === undefined || a.eventId === filter.eventId) &&
              (filter.status === undefined || a.status === filter.status) &&
              (before === null || a.attemptedAt < before.attemptedAt || (a.attemptedAt === before.attemptedAt && a.id < before.id)),
          )
          .sort(byRecentFirst)
          .slice(0, limit)
          .map((a) => structuredClone(a)),
      purgeUntil: async (cutoffMs, limit) => {
        const due = [...attempts.scan()].filter((a) => a.attemptedAt <= cutoffMs).slice(0, limit);
        for (const a of due) attempts.delete(key(a.spaceId, a.id));
        return due.length;
      },
    },
  };
}
