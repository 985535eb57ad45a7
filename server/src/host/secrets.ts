import { createHash, timingSafeEqual } from 'node:crypto';
import type { Random } from '@baton/core';

/**
 * API key secrets: `bk_<key id, 32 hex>_<32 random bytes, base64url>`. The id part finds the
 * row; the whole secret is checked against the stored SHA-256 in constant time. SHA-256
 * without salt is enough because the secret has 256 bits of entropy: there is nothing to guess.
 */
const secretPattern = /^bk_([0-9a-f]{32})_([A-Za-z0-9_-]{43})$/;

export function issueSecret(random: Random): { keyId: string; secret: string; secretHash: string } {
  const keyId = random.uuid();
  const secret = `bk_${keyId.replaceAll('-', '')}_${Buffer.from(random.bytes(32)).toString('base64url')}`;
  return { keyId, secret, secretHash: hashSecret(secret) };
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** The key id a secret names, or undefined when it is not shaped like one of ours. */
export function keyIdOf(secret: string): string | undefined {
  const hex = secretPattern.exec(secret)?.[1];
  if (!hex) return undefined;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function secretMatches(secret: string, storedHash: string): boolean {
  const given = Buffer.from(hashSecret(secret), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return given.length === stored.length && timingSafeEqual(given, stored);
}

/** Constant-time comparison of two tokens of any length (the admin token). */
export function tokensEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}
