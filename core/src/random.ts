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

export function uuidFromBytes(b: Uint8Array): string {
  const bytes = Uint8Array.from(b.subarray(0, 16));
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = Array.from(bytes, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
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
