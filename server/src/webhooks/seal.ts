import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Random } from '@baton/core';

/**
 * Signing secrets at rest: AES-256-GCM under the server key (BATON_SECRET_KEY, 32 bytes
 * base64), so a database dump does not hand out the secrets. Sealed form:
 * `v1.<iv base64url>.<tag base64url>.<ciphertext base64url>`. The destination's id and space
 * are the additional data: a sealed secret copied onto another row does not open.
 */
export const secretKeyBytes = 32;

export class SealError extends Error {
  override name = 'SealError';
}

/** The key from its base64 form; anything but 32 bytes is a configuration error. */
export function parseSecretKey(base64: string): Buffer {
  const key = Buffer.from(base64, 'base64');
  if (key.length !== secretKeyBytes || key.toString('base64').replace(/=+$/, '') !== base64.trim().replace(/=+$/, '')) {
    throw new SealError(`BATON_SECRET_KEY must be ${secretKeyBytes} bytes in base64 (openssl rand -base64 32)`);
  }
  return key;
}

/** A Standard Webhooks secret: whsec_ + base64 of 32 random bytes. */
export function newSigningSecret(random: Random): string {
  return `whsec_${Buffer.from(random.bytes(32)).toString('base64')}`;
}

const aad = (spaceId: string, destinationId: string): Buffer => Buffer.from(`${spaceId}/${destinationId}`, 'utf8');

export function seal(key: Buffer, spaceId: string, destinationId: string, secret: string): string {
  // The IV always comes from the OS: a repeated IV under one key breaks GCM, and the injected
  // Random is seeded in tests and simulations.
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad(spaceId, destinationId));
  const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), sealed.toString('base64url')].join('.');
}

export function unseal(key: Buffer, spaceId: string, destinationId: string, sealed: string): string {
  const [version, iv, tag, data] = sealed.split('.');
  if (version !== 'v1' || !iv || !tag || data === undefined) throw new SealError('not a sealed secret');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(aad(spaceId, destinationId));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    throw new SealError('sealed secret does not open with this key (BATON_SECRET_KEY changed?)');
  }
}
