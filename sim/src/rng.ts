import { uuidFromBytes, type Random } from '@baton/core';
import seedrandom from 'seedrandom';

/**
 * The one source of every choice in a run: request timing, network faults, agent decisions,
 * and the server's own ids. Forked streams keep those apart, so adding a draw in one place does
 * not reshuffle all the others (a smaller trace diff when something changes).
 */
export class SimRandom implements Random {
  private readonly next: seedrandom.PRNG;

  constructor(readonly seed: string) {
    this.next = seedrandom(seed);
  }

  /** A float in [0, 1). */
  float(): number {
    return this.next();
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return p > 0 && this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[Math.floor(this.next() * items.length)]!;
  }

  fork(name: string): SimRandom {
    return new SimRandom(`${this.seed}/${name}/${this.next()}`);
  }

  bytes(length: number): Uint8Array {
    const out = new Uint8Array(length);
    for (let i = 0; i < length; i++) out[i] = Math.floor(this.next() * 256);
    return out;
  }

  uuid(): string {
    return uuidFromBytes(this.bytes(16));
  }
}
