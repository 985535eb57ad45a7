/**
 * Source of ids and secrets. Crypto-strong in the server (server/src/host/crypto-random.ts),
 * seeded in the simulator and in tests, so ids are reproducible there.
 */
export interface Random {
  /** A version-4 UUID. */
  uuid(): string;
  /** `length` random bytes. */
  bytes(length: number): Uint8Array;
}

/** Two hex digits per byte value: uuidFromBytes runs for every id (the simulator makes many). */
const hexOf = Array.from({ length: 256 }, (_, x) => x.toString(16).padStart(2, '0'));

export function uuidFromBytes(b: Uint8Array): string {
  const h = (i: number): string => hexOf[b[i]!]!;
  const version = hexOf[(b[6]! & 0x0f) | 0x40]!;
  const variant = hexOf[(b[8]! & 0x3f) | 0x80]!;
  return `${h(0)}${h(1)}${h(2)}${h(3)}-${h(4)}${h(5)}-${version}${h(7)}-${variant}${h(9)}-${h(10)}${h(11)}${h(12)}${h(13)}${h(14)}${h(15)}`;
}

/**
 * A small deterministic generator (mulberry32) for tests and the simulator. Not for secrets.
 */
export class SeededRandom implements Random {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  private nextUint32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }
  bytes(length: number): Uint8Array {
    const out = new Uint8Array(length);
    for (let i = 0; i < length; i++) out[i] = this.nextUint32() & 0xff;
    return out;
  }
  uuid(): string {
    return uuidFromBytes(this.bytes(16));
  }
}
