import { describe, expect, it } from 'vitest';
import { plantableBugs } from './bugs/catalogue';
import { main, replayCommand } from './cli';
import { shrink } from './shrink';
import { simulate, type SimResult, type StoreKind } from './simulation';

/**
 * Bugs that only some runs reach, with the seeds it takes (the rest are caught within 10). None
 * at present: a passed-over allowance head (allowance-skips-blocked-head) needed 30 until quota
 * agents sometimes waited for a whole window's units; now seed 7 at 6 agents catches it.
 */
const seedsToCatch: Partial<Record<string, number>> = {};

describe('the simulator', () => {
  it('is deterministic: a seed run twice gives the same trace hash, other seeds other hashes', async () => {
    const hashes: string[] = [];
    for (const seed of [1, 2, 3, 4]) {
      const first = await simulate({ seed, agents: 8, steps: 1_500, store: 'memory' });
      const again = await simulate({ seed, agents: 8, steps: 1_500, store: 'memory' });
      expect(again.traceHash).toBe(first.traceHash);
      expect(again.requests).toBe(first.requests);
      hashes.push(first.traceHash);
    }
    expect(new Set(hashes).size).toBe(hashes.length);
  }, 120_000);

  it('passes every invariant on 20 seeds with swarm-drawn faults', async () => {
    const failures: string[] = [];
    let requests = 0;
    for (let seed = 100; seed < 120; seed++) {
      const result = await simulate({ seed, agents: 10, steps: 2_000, store: 'memory' });
      requests += result.requests;
      if (result.violations.length > 0) failures.push(`${replayCommand(result, undefined, false)}: ${result.violations[0]}`);
    }
    expect(failures).toEqual([]);
    expect(requests).toBeGreaterThan(10_000);
  }, 120_000);

  it.each(plantableBugs)('catches the planted bug %s with a seed whose replay reproduces it', async (bug) => {
    let failing: SimResult | undefined;
    const lastSeed = seedsToCatch[bug] ?? 10;
    for (let seed = 1; seed <= lastSeed && !failing; seed++) {
      const result = await simulate({ seed, agents: 6, steps: 1_500, store: 'memory', plant: bug });
      if (result.violations.length > 0) failing = result;
    }
    expect(failing, `no seed in 1..${lastSeed} caught ${bug}`).toBeDefined();
    const replay = await simulate(failing!.config);
    expect(replay.traceHash).toBe(failing!.traceHash);
    expect(replay.violations).toEqual(failing!.violations);
    // The printed command replays it too: exit code 1 means it failed again.
    const argv = replayCommand(failing!, bug, false).split(' ').slice(4); // after 'npm run sim --'
    expect(await quietly(() => main(argv))).toBe(1);
  }, 240_000);

  it('catches a double delivery (message-claims-leased) with the task invariants alone, replayably', async () => {
    // No message agents: only the task workers' raw recv reaches the bug, so only the task checks can see it.
    const failing = await simulate({ seed: 1, agents: 6, steps: 1_500, store: 'memory', messageAgents: false, plant: 'message-claims-leased' });
    expect(failing.violations).toContainEqual(expect.stringMatching(/^task delivery .* two live leases$/));
    const replay = await simulate(failing.config);
    expect(replay.traceHash).toBe(failing.traceHash);
    expect(replay.violations).toEqual(failing.violations);
  }, 60_000);

  it('catches a group deciding twice (group-decides-twice) with the group invariants, replayably', async () => {
    // A coordinator's late verdict on a DECIDED group runs the rule again: a second decision.
    const failing = await simulate({ seed: 1, agents: 6, steps: 1_500, store: 'memory', plant: 'group-decides-twice' });
    expect(failing.violations).toContainEqual(expect.stringMatching(/^group .*(decided twice|the store showed .* decided at .*, now DECIDED)/));
    const replay = await simulate(failing.config);
    expect(replay.traceHash).toBe(failing.traceHash);
    expect(replay.violations).toEqual(failing.violations);
  }, 60_000);

  it('shrinks a failing run to a smaller one that still fails', async () => {
    const failing = await simulate({ seed: 1, agents: 8, steps: 1_500, store: 'memory', plant: 'idempotency-applies-twice' });
    expect(failing.violations.length).toBeGreaterThan(0);
    const small = await shrink(failing, 40);
    expect(small.violations.length).toBeGreaterThan(0);
    expect(small.config.agents * small.config.steps).toBeLessThan(failing.config.agents * failing.config.steps);
  }, 60_000);
});

/** Differential mode: the same workload on the SQL stores, held to the same invariants. */
const sqlStores: StoreKind[] = process.env.DATABASE_URL ? ['pglite', 'pg'] : ['pglite'];
describe.each(sqlStores)('the simulator on the %s store', (store) => {
  it('passes every invariant on a few seeds', async () => {
    for (const seed of [7, 8]) {
      const result = await simulate({ seed, agents: 5, steps: 600, store });
      expect(result.violations, replayCommand(result, undefined, false)).toEqual([]);
      expect(result.requests).toBeGreaterThan(100);
    }
  }, 120_000);
});

async function quietly<T>(work: () => Promise<T>): Promise<T> {
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = (() => true) as typeof process.stdout.write;
  try {
    return await work();
  } finally {
    process.stdout.write = write;
  }
}
