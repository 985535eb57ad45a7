import { defaultSpaceLimits } from '../tenancy/space-limits';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvariantViolation } from '../assert';
import { SeededRandom } from '../random';
import { MemoryStore } from '../store/memory/memory-store';
import type { CapacityRepository } from '../store/repositories';
import type { Tx } from '../store/store';
import { capacityBounds, type Pool, type WorkLimit } from './model';
import * as pools from './service';

/**
 * Claims and releases over random sequences, through the memory store's repositories (the
 * reference every store is held to): 0 <= inUse <= capacity after every step, a claim
 * succeeds exactly when its units fit, a release of units that were claimed always succeeds,
 * and an over-release is refused as a bug and changes nothing.
 */
type Op = { kind: 'claim'; units: number } | { kind: 'release'; units: number } | { kind: 'releaseHeld'; pick: number };

const units = fc.integer({ min: 1, max: 12 });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('claim' as const), units }),
  fc.record({ kind: fc.constant('release' as const), units }),
  fc.record({ kind: fc.constant('releaseHeld' as const), pick: fc.nat() }),
);

const spaceId = '00000000-0000-4000-8000-000000000001';

describe('pool and work-limit capacity properties', () => {
  it.each(['pool', 'work limit'] as const)('keeps 0 <= inUse <= limit over any claim/release sequence of a %s', async (kind) => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 20 }), fc.array(op, { maxLength: 60 }), fc.integer(), async (limit, ops, seed) => {
        const store = new MemoryStore();
        const random = new SeededRandom(seed);
        let now = 1_000;
        const repo = (tx: Tx): CapacityRepository<Pool | WorkLimit> => (kind === 'pool' ? tx.pools : tx.workLimits);
        const readView = (tx: Tx): Promise<{ inUse: number; available: number }> => (kind === 'pool' ? pools.getPool(tx, spaceId, id) : pools.getWorkLimit(tx, spaceId, id));
        const id = await store.transaction(async (tx) => {
          const ctx = { tx, spaceId, nowMs: now, random, limits: defaultSpaceLimits };
          const created = kind === 'pool' ? await pools.createPool(ctx, { name: 'p', capacity: limit }, true) : await pools.createWorkLimit(ctx, { name: 'p', maxConcurrent: limit }, true);
          return created.view.id;
        });
        const held: number[] = []; // units of each claim not yet released, as grants will record them
        let inUse = 0;

        for (const step of ops) {
          now += 1;
          if (step.kind === 'claim') {
            const claimed = await store.transaction((tx) => repo(tx).claim(spaceId, id, step.units, now));
            const fits = step.units <= limit - inUse;
            expect(claimed !== undefined).toBe(fits);
            if (fits) {
              inUse += step.units;
              held.push(step.units);
            }
          } else if (step.kind === 'releaseHeld') {
            if (held.length === 0) continue;
            const [unitsHeld] = held.splice(step.pick % held.length, 1);
            const released = await store.transaction((tx) => repo(tx).release(spaceId, id, unitsHeld!, now));
            inUse -= unitsHeld!;
            expect(released.inUse).toBe(inUse);
          } else if (step.units > inUse) {
            await expect(store.transaction((tx) => repo(tx).release(spaceId, id, step.units, now))).rejects.toThrow(InvariantViolation);
          } else {
            continue; // a release of units nobody is known to hold would break the grant model
          }
          const row = await store.read((tx) => repo(tx).get(spaceId, id));
          expect(row!.inUse).toBe(inUse);
          expect(row!.inUse).toBeGreaterThanOrEqual(0);
          expect(row!.inUse).toBeLessThanOrEqual(limit);
          const view = await store.read(readView);
          expect(view.inUse + view.available).toBe(limit);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('any claim of at most the capacity bound fits an empty pool of that capacity', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: capacityBounds.min, max: capacityBounds.max }), async (capacity) => {
        const store = new MemoryStore();
        const random = new SeededRandom(capacity);
        const created = await store.transaction((tx) => pools.createPool({ tx, spaceId, nowMs: 1, random, limits: defaultSpaceLimits }, { name: 'big', capacity }, true));
        const claimed = await store.transaction((tx) => tx.pools.claim(spaceId, created.view.id, capacity, 2));
        expect(claimed?.inUse).toBe(capacity);
        expect(await store.transaction((tx) => tx.pools.claim(spaceId, created.view.id, 1, 3))).toBeUndefined();
      }),
      { numRuns: 50 },
    );
  });
});
