import { SeededRandom } from '@baton/core';
import { describe, expect, it } from 'vitest';
import { newSigningSecret, parseSecretKey, seal, SealError, unseal } from './seal';

const key = Buffer.alloc(32, 3);

describe('seal', () => {
  it('opens what it sealed, for the same row only; the sealed form does not contain the secret', () => {
    const secret = newSigningSecret(new SeededRandom(1));
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const sealed = seal(key, 'space', 'dest', secret);
    expect(sealed).not.toContain(secret.slice(6));
    expect(unseal(key, 'space', 'dest', sealed)).toBe(secret);
    expect(() => unseal(key, 'space', 'other', sealed)).toThrow(SealError);
    expect(() => unseal(Buffer.alloc(32, 4), 'space', 'dest', sealed)).toThrow(/does not open/);
    expect(seal(key, 'space', 'dest', secret)).not.toBe(sealed);
  });

  it('takes a key of exactly 32 bytes in base64', () => {
    expect(parseSecretKey(key.toString('base64')).equals(key)).toBe(true);
    expect(() => parseSecretKey(Buffer.alloc(31).toString('base64'))).toThrow(SealError);
    expect(() => parseSecretKey('not base64 at all!')).toThrow(SealError);
  });
});
