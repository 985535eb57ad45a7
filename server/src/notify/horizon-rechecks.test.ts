import { describe, expect, it } from 'vitest';
import { horizonRecheckDelaysMs, HorizonRechecks } from './horizon-rechecks';

describe('HorizonRechecks', () => {
  it('re-reads nothing before a wake', () => {
    const rechecks = new HorizonRechecks();
    expect(rechecks.delayMs()).toBeUndefined();
  });

  it('after a wake, re-reads on the quick schedule, then every second until the wait ends', () => {
    const rechecks = new HorizonRechecks();
    rechecks.notified();
    const delays: (number | undefined)[] = [];
    for (let i = 0; i < horizonRecheckDelaysMs.length + 3; i++) {
      delays.push(rechecks.delayMs());
      rechecks.rechecked();
    }
    expect(delays).toEqual([...horizonRecheckDelaysMs, 1_000, 1_000, 1_000]);
  });

  it('a second wake starts the quick schedule again', () => {
    const rechecks = new HorizonRechecks();
    rechecks.notified();
    for (let i = 0; i < 5; i++) rechecks.rechecked();
    rechecks.notified();
    expect(rechecks.delayMs()).toBe(horizonRecheckDelaysMs[0]);
  });
});
