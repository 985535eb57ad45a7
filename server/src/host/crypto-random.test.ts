import { describe, expect, it } from 'vitest';
import { BlockRandom } from './crypto-random';

describe('BlockRandom: CSPRNG bytes taken a block at a time', () => {
  it('hands out the source bytes in order, each byte once, across block refills', () => {
    let next = 0;
    // A counting source: the bytes it produced are the sequence 0, 1, 2, ... (mod 256).
    const random = new BlockRandom((block) => {
      for (let i = 0; i < block.length; i++) block[i] = next++ % 256;
    });
    const taken: number[] = [];
    // 32-byte tokens do not divide the 4,096-byte block evenly with the 7-byte takes between them.
    for (let i = 0; i < 300; i++) taken.push(...random.bytes(i % 2 === 0 ? 32 : 7));
    const blocks = Math.ceil(next / 4096);
    expect(blocks).toBeGreaterThan(1);
    // Every take is a run of consecutive source bytes, and no source byte is handed out twice.
    let expected = 0;
    let at = 0;
    for (let i = 0; i < 300; i++) {
      const length = i % 2 === 0 ? 32 : 7;
      if ((expected % 4096) + length > 4096) expected += 4096 - (expected % 4096); // the rest of a block is skipped, never reused
      expect(taken.slice(at, at + length)).toEqual(Array.from({ length }, (_, k) => (expected + k) % 256));
      expected += length;
      at += length;
    }
  });

  it('zeroes what it handed out, so the block never holds a token already given', () => {
    let block: Buffer | undefined;
    const random = new BlockRandom((b) => {
      b.fill(0xab);
      block = b;
    });
    const token = random.bytes(32);
    expect([...token].every((x) => x === 0xab)).toBe(true);
    expect([...block!.subarray(0, 32)].every((x) => x === 0)).toBe(true);
    expect(block![32]).toBe(0xab);
  });

  it('answers a take larger than a block from the source directly, and zero bytes as empty', () => {
    const random = new BlockRandom((b) => b.fill(7));
    expect(random.bytes(10_000)).toHaveLength(10_000);
    expect(random.bytes(0)).toHaveLength(0);
    expect(() => random.bytes(-1)).toThrow();
  });

  it('draws distinct tokens from the real CSPRNG', () => {
    const random = new BlockRandom();
    const tokens = new Set(Array.from({ length: 1_000 }, () => Buffer.from(random.bytes(32)).toString('hex')));
    expect(tokens.size).toBe(1_000);
    expect(random.uuid()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
