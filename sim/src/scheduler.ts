import { ManualClock } from '@baton/core';

/** What an entry's run returns when it found nothing to do: the step skips waiting for quiet. */
export const nothingHappened: unique symbol = Symbol('nothing happened');

type Run = () => Promise<void> | void | typeof nothingHappened;

interface Entry {
  atMs: number;
  order: number;
  label: string;
  run: Run;
  /** False for a side workload's entries (`uncounted()`): they run, but not as one of the run's --steps. */
  counted: boolean;
}

/**
 * Virtual time. Work is queued at a time; `step` runs the earliest (ties in queue order), moves
 * the simulated clock to it, and waits until everything it set off has settled before the next
 * one starts. One thing happens at a time, so a run is a pure function of its seed.
 */
export class Scheduler {
  readonly clock: ManualClock;
  private readonly queue = new MinHeap<Entry>((a, b) => a.atMs - b.atMs || a.order - b.order);
  private order = 0;
  steps = 0;

  constructor(startMs: number) {
    this.clock = new ManualClock(startMs, 'simulated');
  }

  now(): number {
    return this.clock.now();
  }

  at(atMs: number, label: string, run: Run, counted = true): void {
    this.queue.push({ atMs: Math.max(atMs, this.now()), order: this.order++, label, run, counted });
  }

  /**
   * The same queue and clock, but what is queued through it does not count toward `steps`: a
   * side workload (claims, timers, runs) runs beside the others without shortening their safety
   * phase, so the steps they get, and the seeds that catch their planted bugs, stay as they were.
   */
  uncounted(): Scheduler {
    const view = Object.create(this) as Scheduler;
    view.at = (atMs, label, run) => this.at(atMs, label, run, false);
    return view;
  }

  after(delayMs: number, label: string, run: Run): void {
    this.at(this.now() + delayMs, label, run);
  }

  /** A promise that resolves `delayMs` of simulated time from now. */
  sleep(delayMs: number, label = 'sleep'): Promise<void> {
    return new Promise((resolve) => this.after(delayMs, label, resolve));
  }

  get pending(): number {
    return this.queue.size;
  }

  nextAtMs(): number | undefined {
    return this.queue.peek()?.atMs;
  }

  /** Runs the earliest entry; false when nothing is queued. */
  async step(): Promise<boolean> {
    const entry = this.queue.pop();
    if (!entry) return false;
    if (entry.atMs > this.now()) this.clock.advance(entry.atMs - this.now());
    if (entry.counted) this.steps++;
    const outcome = entry.run();
    // An entry that says it did nothing (a timeout whose request was already answered) set off
    // nothing to wait for; it is still a step, as before.
    if (outcome === nothingHappened) return true;
    await outcome;
    await quiesce();
    return true;
  }

}

/** A binary min-heap: the queue holds thousands of entries in a long run. */
class MinHeap<T> {
  private readonly items: T[] = [];
  constructor(private readonly less: (a: T, b: T) => number) {}

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    const items = this.items;
    items.push(item);
    for (let i = items.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (this.less(items[i]!, items[parent]!) >= 0) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    items[0] = last;
    for (let i = 0; ; ) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < items.length && this.less(items[l]!, items[m]!) < 0) m = l;
      if (r < items.length && this.less(items[r]!, items[m]!) < 0) m = r;
      if (m === i) break;
      [items[i], items[m]] = [items[m]!, items[i]!];
      i = m;
    }
    return top;
  }
}

/**
 * Lets every promise continuation that the last step set off run to its next wait. Agents only
 * wait on the scheduler, so once this returns they are all parked on queued entries.
 */
async function quiesce(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
