import { assert } from '../../assert';
import type { Claim, ClaimFilter, ClaimKeyRow, ClaimListPosition } from '../../claims/model';
import type { ClaimRepository } from '../../claims/repository';
import { assertClaim, assertClaimKeyRow } from '../../claims/rules';
import type { LockOptions } from '../lock-options';
import { MemoryTable } from './table';

const key = (...parts: string[]): string => parts.join('\u0000');
const byPosition = (a: Claim, b: Claim): number => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const isAfter = (c: Claim, p: ClaimListPosition): boolean => c.createdAt > p.createdAt || (c.createdAt === p.createdAt && c.id > p.id);
const matches = (c: Claim, f: ClaimFilter): boolean =>
  (f.claimKey === null || c.claimKey === f.claimKey) && (f.scopeId === null || c.scopeId === f.scopeId) && (f.states === null || f.states.includes(c.state));

/**
 * Claims and their key rows in memory. Transactions run one at a time, so a lock is a no-op and
 * acquires of one key are serial by construction. The SQL store's guards are asserted here too:
 * at most one HELD claim per key (its unique index), and a key's fencing token only grows.
 */
export function memoryClaims(undoLog: () => (() => void)[] | undefined): ClaimRepository {
  const claims = new MemoryTable<Claim>(undoLog);
  const keys = new MemoryTable<ClaimKeyRow>(undoLog);
  const lock = (_options?: LockOptions): void => undefined;
  const heldOf = (spaceId: string, claimKey: string): Claim | undefined => {
    for (const c of claims.scan()) if (c.spaceId === spaceId && c.claimKey === claimKey && c.state === 'HELD') return structuredClone(c);
    return undefined;
  };
  const assertOneHeld = (c: Claim): void => {
    const held = heldOf(c.spaceId, c.claimKey);
    assert(c.state !== 'HELD' || held === undefined || held.id === c.id, `claim ${c.id}: claimKey ${c.claimKey} is already HELD by claim ${held?.id}`);
  };
  return {
    lockKey: async (spaceId, claimKey, nowMs) => {
      const k = key(spaceId, claimKey);
      const existing = keys.get(k);
      if (existing) return existing;
      const created: ClaimKeyRow = { spaceId, claimKey, lastFencingToken: 0, createdAt: nowMs, updatedAt: nowMs };
      keys.set(k, created);
      return created;
    },
    advanceKey: async (next) => {
      assertClaimKeyRow(next);
      const stored = keys.get(key(next.spaceId, next.claimKey));
      assert(stored !== undefined && next.lastFencingToken > stored.lastFencingToken, `claim key ${next.claimKey}: fencing token ${next.lastFencingToken} does not grow past ${stored?.lastFencingToken}`);
      keys.set(key(next.spaceId, next.claimKey), next);
    },
    getHeld: async (spaceId, claimKey, options) => (lock(options), heldOf(spaceId, claimKey)),
    insert: async (c) => {
      assertClaim(c);
      assert(!claims.has(key(c.spaceId, c.id)), `duplicate claim ${c.id}`);
      assertOneHeld(c);
      for (const other of claims.scan()) {
        assert(other.spaceId !== c.spaceId || other.claimKey !== c.claimKey || other.fencingToken !== c.fencingToken, `claim ${c.id}: fencing token ${c.fencingToken} of ${c.claimKey} is claim ${other.id}'s`);
      }
      claims.set(key(c.spaceId, c.id), c);
    },
    get: async (spaceId, id, options) => (lock(options), claims.get(key(spaceId, id))),
    update: async (c) => {
      assertClaim(c);
      assert(claims.has(key(c.spaceId, c.id)), `update of missing claim ${c.id}`);
      assertOneHeld(c);
      claims.set(key(c.spaceId, c.id), c);
    },
    list: async (spaceId, filter, after, limit) =>
      [...claims.scan()]
        .filter((c) => c.spaceId === spaceId && matches(c, filter) && (after === null || isAfter(c, after)))
        .sort(byPosition)
        .slice(0, limit)
        .map((c) => structuredClone(c)),
    claimExpired: async (nowMs, limit) =>
      [...claims.scan()]
        .filter((c) => c.state === 'HELD' && c.leaseExpiresAt <= nowMs)
        .sort((a, b) => a.leaseExpiresAt - b.leaseExpiresAt || (a.id < b.id ? -1 : 1))
        .slice(0, limit)
        .map((c) => structuredClone(c)),
    countLive: async (spaceIds, nowMs) => {
      const wanted = new Set(spaceIds);
      const counts = new Map<string, number>();
      for (const c of claims.scan()) {
        if (wanted.has(c.spaceId) && c.state === 'HELD' && c.leaseExpiresAt > nowMs) counts.set(c.spaceId, (counts.get(c.spaceId) ?? 0) + 1);
      }
      return counts;
    },
    purgeEnded: async (cutoffs, limit) => {
      const cutoffOf = new Map(cutoffs.map((c) => [c.spaceId, c.cutoffMs]));
      const due = [...claims.scan()]
        .filter((c) => c.state !== 'HELD' && c.endedAt !== null && c.endedAt <= (cutoffOf.get(c.spaceId) ?? -Infinity))
        .sort((a, b) => a.endedAt! - b.endedAt! || (a.id < b.id ? -1 : 1))
        .slice(0, limit);
      for (const c of due) claims.delete(key(c.spaceId, c.id));
      return due.length;
    },
  };
}
