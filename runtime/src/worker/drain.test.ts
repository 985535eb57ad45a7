import { describe, expect, it } from 'vitest';
import { ManualClock } from '../testing/manual-clock';
import { drain, drainOnSignals, type DrainableRun } from './drain';

/** A delivery in flight that the test finishes, and that records being abandoned. */
function run(runs: Set<DrainableRun>) {
  let markSettled!: () => void;
  const settled = new Promise<void>((resolve) => (markSettled = resolve));
  const entry = {
    settled,
    abandoned: false,
    finish: () => markSettled(),
    abandon: async () => {
      entry.abandoned = true;
      markSettled();
    },
  };
  runs.add(entry);
  void settled.then(() => runs.delete(entry));
  return entry;
}

describe('drain', () => {
  it('waits for admission to end before counting the deadline', async () => {
    const clock = new ManualClock();
    const runs = new Set<DrainableRun>();
    let endAdmission!: () => void;
    let drained = false;
    void drain(runs, new Promise<void>((resolve) => (endAdmission = resolve)), clock, 0).then(() => (drained = true));
    await clock.advance(10_000);
    expect(drained).toBe(false);
    endAdmission();
    await clock.advance(0);
    expect(drained).toBe(true);
  });

  it('ends as soon as every delivery finished, abandoning none', async () => {
    const clock = new ManualClock();
    const runs = new Set<DrainableRun>();
    const [a, b] = [run(runs), run(runs)];
    let drained = false;
    void drain(runs, Promise.resolve(), clock, 30_000).then(() => (drained = true));
    await clock.advance(1_000);
    a.finish();
    await clock.advance(1_000);
    expect(drained).toBe(false);
    b.finish();
    await clock.advance(0);
    expect(drained).toBe(true);
    expect([a.abandoned, b.abandoned]).toEqual([false, false]);
    expect(clock.pending).toBe(0); // the deadline's timer is gone too
  });

  it('abandons what still runs at the deadline, and only that', async () => {
    const clock = new ManualClock();
    const runs = new Set<DrainableRun>();
    const [quick, stuck] = [run(runs), run(runs)];
    let drained = false;
    void drain(runs, Promise.resolve(), clock, 5_000).then(() => (drained = true));
    quick.finish();
    await clock.advance(4_999);
    expect(drained).toBe(false);
    await clock.advance(1);
    expect(drained).toBe(true);
    expect([quick.abandoned, stuck.abandoned]).toEqual([false, true]);
  });
});

describe('drainOnSignals', () => {
  it('stops on each signal until the hooks are removed', () => {
    let stops = 0;
    const remove = drainOnSignals(() => (stops += 1), ['SIGUSR2']);
    process.emit('SIGUSR2', 'SIGUSR2');
    expect(stops).toBe(1);
    remove();
    expect(process.listenerCount('SIGUSR2')).toBe(0);
  });
});
