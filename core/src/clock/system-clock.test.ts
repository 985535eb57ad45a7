import { afterEach, describe, expect, it, vi } from 'vitest';
import { SystemClock } from './system-clock';

afterEach(() => vi.useRealTimers());

describe('SystemClock.schedule', () => {
  it('waits out a delay longer than setTimeout can hold instead of firing at once', () => {
    vi.useFakeTimers();
    const fired = vi.fn();
    const longMs = 100 * 365 * 24 * 60 * 60 * 1000;
    new SystemClock().schedule(longMs, fired);
    vi.advanceTimersByTime(2 ** 31);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(longMs - 2 ** 31 - 1);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledOnce();
  });

  it('cancels a long delay in any of its steps', () => {
    vi.useFakeTimers();
    const fired = vi.fn();
    const cancel = new SystemClock().schedule(3 * 2 ** 31, fired);
    vi.advanceTimersByTime(2 ** 31 + 10);
    cancel();
    vi.advanceTimersByTime(3 * 2 ** 31);
    expect(fired).not.toHaveBeenCalled();
  });
});
