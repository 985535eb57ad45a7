import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DataDirInUseError, lockDataDir, lockFileName } from './data-dir-lock';

const root = mkdtempSync(join(tmpdir(), 'baton-lock-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the data directory lock', () => {
  it('creates the directory for its owner alone, writes the owner pid, and refuses a second lock naming that pid', () => {
    const dataDir = join(root, 'a', 'data');
    const lock = lockDataDir(dataDir);
    try {
      expect(readFileSync(join(dataDir, lockFileName), 'utf8')).toBe(`${process.pid}\n`);
      expect(statSync(dataDir).mode & 0o777).toBe(0o700);
      let refusal: unknown;
      try {
        lockDataDir(dataDir).release();
      } catch (error) {
        refusal = error;
      }
      expect(refusal).toBeInstanceOf(DataDirInUseError);
      expect((refusal as DataDirInUseError).ownerPid).toBe(process.pid);
      expect((refusal as Error).message).toBe(`the data directory ${dataDir} is in use by another Baton process (pid ${process.pid}); stop it or set BATON_DATA_DIR`);
    } finally {
      lock.release();
    }
  });

  it('is free again once released, and a second release does nothing', () => {
    const dataDir = join(root, 'b');
    const first = lockDataDir(dataDir);
    first.release();
    first.release();
    const second = lockDataDir(dataDir);
    expect(() => lockDataDir(dataDir)).toThrow(DataDirInUseError);
    second.release();
  });

  it('locks each directory on its own', () => {
    const one = lockDataDir(join(root, 'c1'));
    let two: { release(): void } | undefined;
    expect(() => (two = lockDataDir(join(root, 'c2')))).not.toThrow();
    one.release();
    two?.release();
  });
});
