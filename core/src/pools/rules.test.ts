import { describe, expect, it } from 'vitest';
import { InvariantViolation } from '../assert';
import { capacityBounds, type Pool, type WorkLimit } from './model';
import { assertPool, assertWorkLimit, claimUnits, releaseUnits } from './rules';

const pool: Pool = { id: 'p1', spaceId: 's', name: 'gpu', capacity: 4, inUse: 1, createdAt: 1, updatedAt: 1 };
const limit: WorkLimit = { id: 'w1', spaceId: 's', name: 'crawl', maxConcurrent: 2, inUse: 0, createdAt: 1, updatedAt: 1 };

describe('pool rules', () => {
  it('claims what fits, up to the capacity exactly, and stamps updatedAt', () => {
    expect(claimUnits(pool, pool.capacity, 3, 9)).toEqual({ ...pool, inUse: 4, updatedAt: 9 });
    expect(claimUnits(pool, pool.capacity, 4, 9)).toBeUndefined();
  });

  it('releases what is in use; more is a bug', () => {
    expect(releaseUnits(pool, 1, 9)).toEqual({ ...pool, inUse: 0, updatedAt: 9 });
    expect(() => releaseUnits(pool, 2, 9)).toThrow(InvariantViolation);
  });

  it.each([0, -1, 0.5, 1_000_001])('refuses %s units as a bug', (units) => {
    expect(() => claimUnits(pool, pool.capacity, units, 9)).toThrow(InvariantViolation);
    expect(() => releaseUnits(pool, units, 9)).toThrow(InvariantViolation);
  });

  it('asserts 0 <= inUse <= limit and the limit bounds', () => {
    expect(() => assertPool(pool)).not.toThrow();
    expect(() => assertPool({ ...pool, inUse: 5 })).toThrow(InvariantViolation);
    expect(() => assertPool({ ...pool, inUse: -1 })).toThrow(InvariantViolation);
    expect(() => assertPool({ ...pool, capacity: 0, inUse: 0 })).toThrow(InvariantViolation);
    expect(() => assertWorkLimit(limit)).not.toThrow();
    expect(() => assertWorkLimit({ ...limit, inUse: 3 })).toThrow(/work limit w1: 3 in use exceeds its limit 2/);
  });

  it('takes the bounds themselves as whole units and limits', () => {
    const big: Pool = { ...pool, capacity: capacityBounds.max, inUse: 0 };
    expect(claimUnits(big, big.capacity, capacityBounds.max, 9)).toMatchObject({ inUse: capacityBounds.max });
    expect(() => assertPool(big)).not.toThrow();
    expect(() => assertPool({ ...pool, capacity: capacityBounds.max + 1 })).toThrow(InvariantViolation);
    expect(() => assertPool({ ...pool, capacity: 2.5 })).toThrow(InvariantViolation);
    expect(() => assertPool({ ...pool, inUse: 0.5 })).toThrow(InvariantViolation);
  });
});
