import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dataDirSecretKey, SecretKeyFileError, secretKeyFileName } from './data-dir-secret-key';
import { parseSecretKey } from '../webhooks/seal';

const root = mkdtempSync(join(tmpdir(), 'baton-key-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the secret key kept in the data directory', () => {
  it('is generated once, 32 bytes in base64 in a file only its owner can read, then read back', () => {
    const first = dataDirSecretKey(root);
    expect(first.created).toBe(true);
    expect(first.path).toBe(join(root, secretKeyFileName));
    expect(statSync(first.path).mode & 0o777).toBe(0o600);
    expect(parseSecretKey(readFileSync(first.path, 'utf8').trim()).equals(first.key)).toBe(true);

    const again = dataDirSecretKey(root);
    expect(again.created).toBe(false);
    expect(again.key.equals(first.key)).toBe(true);
  });

  it('ignores a temporary file a crash left mid-write', () => {
    const dataDir = mkdtempSync(join(root, 'crashed-'));
    writeFileSync(join(dataDir, `${secretKeyFileName}.tmp`), 'half');
    expect(dataDirSecretKey(dataDir).key).toHaveLength(32);
  });

  it('refuses a damaged key file rather than replacing it (secrets sealed under it would be lost)', () => {
    const dataDir = mkdtempSync(join(root, 'damaged-'));
    writeFileSync(join(dataDir, secretKeyFileName), 'not a key\n');
    expect(() => dataDirSecretKey(dataDir)).toThrow(SecretKeyFileError);
    expect(readFileSync(join(dataDir, secretKeyFileName), 'utf8')).toBe('not a key\n');
  });
});
