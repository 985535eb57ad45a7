import { describe, expect, it } from 'vitest';
import { SteppingClock } from './testing/stepping-clock';
import { systemClock, type RuntimeClock } from './clock';
import { backoffDelayMs, defaultRetryPolicy, parseRetryAfterMs, withRetry, type RetryContext, type RetryPolicy } from './retry';


const fixed = (value: number) => ({ next: () => value });
const policy: RetryPolicy = { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 1_000, maxElapsedMs: 10_000 };

class Transient extends Error {
  constructor(readonly retryAfterMs: number | null = null) {
    super('transient');
  }
}

function context(clock: SteppingClock, overrides: Partial<RetryContext> = {}): RetryContext {
  return {
    policy,
    clock,
    random: fixed(0.5),
    isRetryable: (e) => e instanceof Transient,
    retryAfterMsOf: (e) => (e instanceof Transient ? e.retryAfterMs : null),
    ...overrides,
  };
}

describe('backoffDelayMs', () => {
  it('draws uniformly below a ceiling that doubles per retry up to maxDelayMs', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffDelayMs(n, policy, fixed(0.999999)))).toEqual([99, 199, 399, 799, 999, 999]);
    expect(backoffDelayMs(3, policy, fixed(0))).toBe(0);
    expect(backoffDelayMs(3, policy, fixed(0.25))).toBe(100);
  });
});

describe('parseRetryAfterMs', () => {
  const now = Date.UTC(2026, 0, 1, 12, 0, 0);
  it('reads delta-seconds', () => {
    expect(parseRetryAfterMs('3', now)).toBe(3_000);
    expect(parseRetryAfterMs(' 0 ', now)).toBe(0);
  });
  it('reads an HTTP date relative to now, never below zero', () => {
    expect(parseRetryAfterMs(new Date(now + 7_000).toUTCString(), now)).toBe(7_000);
    expect(parseRetryAfterMs(new Date(now - 7_000).toUTCString(), now)).toBe(0);
  });
  it('gives null for absent or unreadable values', () => {
    expect(parseRetryAfterMs(undefined, now)).toBeNull();
    expect(parseRetryAfterMs('soon', now)).toBeNull();
    expect(parseRetryAfterMs('-1', now)).toBeNull();
  });
});

describe('withRetry', () => {
  it('retries retryable failures with jittered backoff until one succeeds', async () => {
    const clock = new SteppingClock();
    let calls = 0;
    const result = await withRetry(async (n) => {
      calls++;
      if (n < 4) throw new Transient();
      return 'done';
    }, context(clock));
    expect(result).toBe('done');
    expect(calls).toBe(4);
    expect(clock.slept).toEqual([50, 100, 200]);
  });

  it('throws a non-retryable error at once', async () => {
    const clock = new SteppingClock();
    const fatal = new Error('fatal');
    let calls = 0;
    await expect(withRetry(async () => {
      calls++;
      throw fatal;
    }, context(clock))).rejects.toBe(fatal);
    expect(calls).toBe(1);
    expect(clock.slept).toEqual([]);
  });

  it('stops after maxAttempts and throws the last error', async () => {
    const clock = new SteppingClock();
    const errors: Transient[] = [];
    const failure = withRetry(async () => {
      const e = new Transient();
      errors.push(e);
      throw e;
    }, context(clock));
    await expect(failure).rejects.toBeInstanceOf(Transient);
    await failure.catch((e) => expect(e).toBe(errors.at(-1)));
    expect(errors).toHaveLength(policy.maxAttempts);
    expect(clock.slept).toEqual([50, 100, 200, 400]);
  });

  it('waits at least Retry-After, and the backoff when it is longer', async () => {
    const clock = new SteppingClock();
    const waits = [2_000, 10];
    await withRetry(async (n) => {
      if (n <= waits.length) throw new Transient(waits[n - 1]!);
      return 'ok';
    }, context(clock, { random: fixed(0.5) }));
    expect(clock.slept).toEqual([2_000, 100]);
  });

  it('does not retry when the wait would pass maxElapsedMs', async () => {
    const clock = new SteppingClock();
    let calls = 0;
    await expect(withRetry(async () => {
      calls++;
      throw new Transient(60_000);
    }, context(clock))).rejects.toBeInstanceOf(Transient);
    expect(calls).toBe(1);
    expect(clock.slept).toEqual([]);
  });

  it('counts the time attempts take against maxElapsedMs', async () => {
    const clock = new SteppingClock();
    let calls = 0;
    await expect(withRetry(async () => {
      calls++;
      clock.nowMs += 4_000; // each attempt takes 4 s
      throw new Transient();
    }, context(clock))).rejects.toBeInstanceOf(Transient);
    // 4 s, sleep 50 ms, 4 s, sleep 100 ms, 4 s: at 12.15 s the next sleep would end past 10 s.
    expect(calls).toBe(3);
    expect(clock.slept).toEqual([50, 100]);
  });

  it('rejects with the abort reason when aborted during a backoff sleep, without another attempt', async () => {
    const clock = new SteppingClock();
    const controller = new AbortController();
    const reason = new Error('shutting down');
    clock.onSleep = () => controller.abort(reason);
    let calls = 0;
    await expect(withRetry(async () => {
      calls++;
      throw new Transient();
    }, context(clock, { signal: controller.signal }))).rejects.toBe(reason);
    expect(calls).toBe(1);
  });

  it('does not start when already aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('gone'));
    let calls = 0;
    await expect(withRetry(async () => calls++, context(new SteppingClock(), { signal: controller.signal }))).rejects.toThrow('gone');
    expect(calls).toBe(0);
  });

  it('has bounded defaults', () => {
    expect(defaultRetryPolicy.maxAttempts).toBeGreaterThan(1);
    expect(defaultRetryPolicy.maxElapsedMs).toBeGreaterThanOrEqual(60_000);
  });
});

describe('systemClock.sleep', () => {
  it('resolves after the delay', async () => {
    const start = Date.now();
    await systemClock.sleep(20);
    expect(Date.now() - start).toBeGreaterThanOrEqual(15);
  });
  it('rejects with the reason on abort', async () => {
    const controller = new AbortController();
    const sleeping = systemClock.sleep(60_000, controller.signal);
    controller.abort(new Error('stop'));
    await expect(sleeping).rejects.toThrow('stop');
  });
});
