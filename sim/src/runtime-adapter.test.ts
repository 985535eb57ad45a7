import { describe, expect, it } from 'vitest';
import { SimRandom } from './rng';
import { simClock, simRandom } from './runtime-adapter';
import { Scheduler } from './scheduler';
import { simulate } from './simulation';

describe('the runtime adapter', () => {
  it('sleeps on scheduler time, wakes at once on abort, and freezes once its owner crashed', async () => {
    const scheduler = new Scheduler(0);
    let alive = true;
    const clock = simClock(scheduler, 'test', () => alive);
    const woke: string[] = [];
    void clock.sleep(100.4).then(() => woke.push(`a@${clock.now()}`));
    const abort = new AbortController();
    const aborted = clock.sleep(50, abort.signal).catch((reason: unknown) => woke.push(`b:${String(reason)}@${clock.now()}`));
    void clock.sleep(200).then(() => woke.push('c'));
    abort.abort('stop');
    await aborted;
    while (scheduler.nextAtMs() !== undefined && scheduler.nextAtMs()! <= 150) await scheduler.step();
    alive = false;
    while (await scheduler.step());
    expect(woke).toEqual(['b:stop@0', 'a@101']);
    const a = simRandom(new SimRandom('x'));
    const b = simRandom(new SimRandom('x'));
    expect([a.next(), a.next()]).toEqual([b.next(), b.next()]);
  });
});

describe('the simulator checks the runtime', () => {
  it('reports a runtime that renews too late as lease loss (LEASE_LOST, lease_lost, redelivery), not as a broken invariant', async () => {
    let leaseLostAnswers = 0;
    let leaseLostEvents = 0;
    let redelivered = 0;
    // Five seeds: the claims, timers and runs workload shares the server's sweep (its timers' firings draw ids
    // from the same stream), which moved seeds 1 to 4 to fewer redeliveries (4 where there were 8).
    for (const seed of [1, 2, 3, 4, 5]) {
      const result = await simulate({ seed, agents: 6, steps: 1_500, store: 'memory', runtimeBugs: { renewTooLate: true } });
      expect(result.violations, `seed ${seed}`).toEqual([]);
      leaseLostAnswers += result.tasks.leaseLostAnswers;
      leaseLostEvents += result.tasks.leaseLostEvents.LEASE_LOST;
      redelivered += result.tasks.redelivered;
    }
    expect(leaseLostAnswers).toBeGreaterThan(5);
    expect(leaseLostEvents).toBeGreaterThan(5);
    expect(redelivered).toBeGreaterThan(5);
  }, 60_000);

  it('catches a runtime whose complete-batch goes out after its lease ran out (a late flush), replayably', async () => {
    let failing: Awaited<ReturnType<typeof simulate>> | undefined;
    for (let seed = 1; seed <= 5 && !failing; seed++) {
      const result = await simulate({ seed, agents: 6, steps: 1_500, store: 'memory', runtimeBugs: { completeLate: true } });
      if (result.violations.length > 0) failing = result;
    }
    expect(failing?.violations).toContainEqual(expect.stringMatching(/^runtime: tworker\d:\d+ sent complete for task delivery .* after its lease ran out at .* by its own deadline$/));
    const replay = await simulate(failing!.config);
    expect(replay.traceHash).toBe(failing!.traceHash);
    expect(replay.violations).toEqual(failing!.violations);
  }, 120_000);

  it('catches a runtime that sends complete with a token after it reported the lease lost, replayably', async () => {
    // Some seed in 1..5: a seed whose swarm weights run few task workers (only the fast ones) may see no lease lost.
    let failing: Awaited<ReturnType<typeof simulate>> | undefined;
    for (let seed = 1; seed <= 5 && !failing; seed++) {
      const result = await simulate({ seed, agents: 6, steps: 1_500, store: 'memory', runtimeBugs: { completeAfterLeaseLost: true } });
      if (result.violations.length > 0) failing = result;
    }
    expect(failing?.violations).toContainEqual(expect.stringMatching(/^runtime: tworker\d:\d+ sent complete for task delivery .* whose lease it reported lost/));
    const replay = await simulate(failing!.config);
    expect(replay.traceHash).toBe(failing!.traceHash);
    expect(replay.violations).toEqual(failing!.violations);
  }, 120_000);
});
