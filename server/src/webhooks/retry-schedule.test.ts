import { SeededRandom } from '@baton/core';
import { describe, expect, it } from 'vitest';
import { defaultRetrySchedule, retryDelayMs } from './retry-schedule';

describe('retryDelayMs', () => {
  it('waits up to 5 s doubling per failure, capped at 1 h (full jitter)', () => {
    const random = new SeededRandom(7);
    for (let failures = 1; failures <= 30; failures++) {
      const ceiling = Math.min(3_600_000, 5_000 * 2 ** (failures - 1));
      for (let i = 0; i < 50; i++) {
        const delay = retryDelayMs(defaultRetrySchedule, failures, random);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(ceiling);
      }
    }
    const late = Array.from({ length: 200 }, () => retryDelayMs(defaultRetrySchedule, 20, random));
    expect(Math.max(...late)).toBeGreaterThan(3_000_000);
  });
});
