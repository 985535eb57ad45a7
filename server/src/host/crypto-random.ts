import { randomFillSync, randomUUID } from 'node:crypto';
import { assert, type Random } from '@baton/core';

/**
 * Bytes are taken from the CSPRNG a block at a time, as node's randomUUID does for its ids: a
 * claim or a submit asks for 32 bytes (a lease token, a secret), and one randomBytes call per
 * token was 2.7 % of the server's CPU in a batched drain (docs/benchmarks.md, "Where the server's
 * CPU goes"). Handed-out bytes are zeroed in the block, so it never holds a token already given.
 */
const blockBytes = 4096;

export class BlockRandom implements Random {
  private block = Buffer.alloc(0);
  private offset = 0;

  constructor(private readonly fill: (block: Buffer) => void = (block) => void randomFillSync(block)) {}

  uuid(): string {
    return randomUUID();
  }

  bytes(length: number): Uint8Array {
    assert(Number.isSafeInteger(length) && length >= 0, `random bytes: length ${length}`);
    if (length > blockBytes) {
      const out = Buffer.alloc(length);
      this.fill(out);
      return new Uint8Array(out.buffer, out.byteOffset, length);
    }
    if (this.offset + length > this.block.length) {
      this.block = Buffer.allocUnsafeSlow(blockBytes);
      this.fill(this.block);
      this.offset = 0;
    }
    const out = new Uint8Array(length);
    out.set(this.block.subarray(this.offset, this.offset + length));
    this.block.fill(0, this.offset, this.offset + length);
    this.offset += length;
    return out;
  }
}

/** The server's id and secret source: crypto-strong. */
export const cryptoRandom: Random = new BlockRandom();
