import { describe, expect, it } from 'vitest';
import { sleep } from './clock';
import { ManualClock } from './manual-clock';

describe('ManualClock', () => {
  it('moves only when advanced', () => {
    const clock = new ManualClock(1_000);
    expect(clock.now()).toBe(1_000);
    expect(clock.advance(500)).toBe(1_500);
  });

  it('fires timers in due order, each at its own due time', () => {
    const clock = new ManualClock(0);
    const seen: string[] = [];
    clock.schedule(30, () => seen.push(`b@${clock.now()}`));
    clock.schedule(10, () => seen.push(`a@${clock.now()}`));
    clock.schedule(30, () => seen.push(`c@${clock.now()}`));
    clock.advance(20);
    expect(seen).toEqual(['a@10']);
    clock.advance(20);
    expect(seen).toEqual(['a@10', 'b@30', 'c@30']);
    expect(clock.now()).toBe(40);
  });

  it('a cancelled timer never fires', () => {
    const clock = new ManualClock(0);
    let fired = false;
    const cancel = clock.schedule(5, () => (fired = true));
    cancel();
    clock.advance(10);
    expect(fired).toBe(false);
  });

  it('sleep resolves on advance or on abort', async () => {
    const clock = new ManualClock(0);
    const done = sleep(clock, 100);
    clock.advance(100);
    await done;
    const controller = new AbortController();
    const aborted = sleep(clock, 1_000, controller.signal);
    controller.abort();
    await aborted;
    expect(clock.nextTimerMs()).toBeUndefined();
  });
});
