import { describe, expect, it } from 'vitest';
import { sleepQuietly } from './sleep-quietly';
import { ManualClock } from './testing/manual-clock';

describe('sleepQuietly', () => {
  it('sleeps on the injected clock, a negative wait as none', async () => {
    const clock = new ManualClock();
    let woke = false;
    void sleepQuietly(clock, 1_000).then(() => (woke = true));
    await clock.advance(999);
    expect(woke).toBe(false);
    await clock.advance(1);
    expect(woke).toBe(true);
    let wokeAtMs = 0;
    void sleepQuietly(clock, -5).then(() => (wokeAtMs = clock.now()));
    const nowMs = clock.now();
    await clock.advance(0);
    expect(wokeAtMs).toBe(nowMs);
  });

  it('wakes, without throwing, when its signal aborts, and does not sleep on an aborted signal', async () => {
    const clock = new ManualClock();
    const stop = new AbortController();
    const sleeping = sleepQuietly(clock, 60_000, stop.signal);
    stop.abort(new Error('stopped'));
    await expect(sleeping).resolves.toBeUndefined();
    await sleepQuietly(clock, 60_000, stop.signal);
    expect(clock.pending).toBe(0);
  });
});
