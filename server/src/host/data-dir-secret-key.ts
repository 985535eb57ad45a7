import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseSecretKey, SealError, secretKeyBytes } from '../webhooks/seal';

/**
 * On the embedded store, a missing BATON_SECRET_KEY is generated once and kept in the data
 * directory (docs/design/0022-one-team-defaults.md), so webhooks work on `npm start` without a setting. PostgreSQL keeps
 * requiring the variable: there several servers share one database and must share its key, and
 * no one server's disk is the place for it. The key sits beside the data it seals, so a copy of
 * the directory carries both: fine for development, which is what the embedded store is for.
 * Called while the data directory's lock is held (data-dir-lock.ts), so no two processes race.
 */
export const secretKeyFileName = 'baton-secret-key';

export class SecretKeyFileError extends Error {
  override name = 'SecretKeyFileError';
}

export interface KeptSecretKey {
  key: Buffer;
  path: string;
  /** True when this call generated it. */
  created: boolean;
}

/** The key kept in `dataDir`, generated (mode 0600, fsynced) when there is none. */
export function dataDirSecretKey(dataDir: string): KeptSecretKey {
  const path = join(dataDir, secretKeyFileName);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return { key: writeNewKey(path), path, created: true };
  }
  try {
    return { key: parseSecretKey(text.trim()), path, created: false };
  } catch (error) {
    if (!(error instanceof SealError)) throw error;
    throw new SecretKeyFileError(`${path} does not hold a key of ${secretKeyBytes} bytes in base64; restore it, or set BATON_SECRET_KEY (webhook destinations sealed under the lost key must then be created again)`);
  }
}

/** Written whole or not at all: a temporary file, fsynced, renamed over, then the directory fsynced. */
function writeNewKey(path: string): Buffer {
  const key = randomBytes(secretKeyBytes);
  const temporary = `${path}.tmp`;
  rmSync(temporary, { force: true }); // left by a crash mid-write: it was never the key
  writeFileSync(temporary, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  fsync(temporary);
  renameSync(temporary, path);
  fsync(join(path, '..'));
  return key;
}

function fsync(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
