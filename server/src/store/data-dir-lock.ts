import { closeSync, constants, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import fsx from 'fs-native-extensions';

/**
 * One owner per embedded data directory. Two PGlite processes on one directory each believe
 * they own it and lose each other's acknowledged writes (their WAL and buffers interleave), so
 * the second must refuse to start.
 *
 * The lock is an OS lock on `<dataDir>/baton.lock` (fs-native-extensions: an open file
 * description lock, fcntl F_OFD_SETLK, on Linux; flock on macOS; LockFileEx on Windows), held
 * on an open descriptor for the life of the owner. The kernel drops it when the descriptor
 * closes, which includes any death of the process, SIGKILL and OOM included: a crashed owner
 * never blocks its restart and nothing has to decide when a lock is stale. The alternatives
 * fall short of that:
 * - PostgreSQL's own postmaster.pid: PGlite writes one, but every PGlite process runs as the
 *   same WebAssembly pid (42), and PostgreSQL takes a lock file naming its own pid for stale.
 * - mkdir lockfiles with an mtime staleness window (proper-lockfile): a killed owner's lock
 *   stays until the window passes, so a restart after SIGKILL fails for that long, and an
 *   owner paused (SIGSTOP, a debugger, a laptop lid) longer than it loses the lock while alive.
 * - a pid file checked with kill(pid, 0): a pid reused by another process (pid 1 in every
 *   container) reads as alive.
 * The file keeps the owner's pid only to name it in the refusal; the lock, not the file's
 * existence, is what counts, so the file is never removed (removing it would race a newcomer).
 * An F_OFD lock is per open, so a second open in the same process is refused as well.
 */
export const lockFileName = 'baton.lock';

export class DataDirInUseError extends Error {
  override name = 'DataDirInUseError';

  constructor(
    readonly dataDir: string,
    /** The owner's pid as it wrote it, when readable. */
    readonly ownerPid: number | undefined,
  ) {
    super(`the data directory ${dataDir} is in use by another Baton process${ownerPid === undefined ? '' : ` (pid ${ownerPid})`}; stop it or set BATON_DATA_DIR`);
  }
}

export interface DataDirLock {
  /** Gives the directory up (idempotent); the process's exit does the same. */
  release(): void;
}

/**
 * Takes the data directory's lock, or throws DataDirInUseError. A directory it creates is its
 * owner's alone (0700, as PostgreSQL wants its data directory): PGlite writes its files
 * world-writable (0666), and the directory holds the kept secret key.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, lockFileName);
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600);
  let locked: boolean;
  try {
    locked = fsx.tryLock(fd);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  if (!locked) {
    closeSync(fd);
    throw new DataDirInUseError(dataDir, ownerPidIn(path));
  }
  ftruncateSync(fd, 0);
  writeSync(fd, `${process.pid}\n`, 0);
  let held = true;
  return {
    release: () => {
      if (!held) return;
      held = false;
      closeSync(fd);
    },
  };
}

function ownerPidIn(path: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined; // Windows' LockFileEx also locks reading: the message goes without a pid
  }
}
