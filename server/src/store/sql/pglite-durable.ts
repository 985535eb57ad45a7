import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { NodeFS } from '@electric-sql/pglite/nodefs';

/**
 * Crash-durable PGlite on disk (docs/embedded-store.md has the measurements).
 *
 * Out of the box PGlite 0.5 on Node makes no fsync call at all: it starts PostgreSQL with -F
 * (fsync off), and Emscripten's NODEFS has no fsync stream operation, so even PostgreSQL's own
 * fsyncs vanish. A process crash loses nothing acknowledged (the WAL reaches the kernel before a
 * commit returns), but an OS crash or power loss lost every recent commit in our tests and could
 * leave the directory unopenable. No public option changes that (`relaxedDurability` and
 * `syncToFs()` are no-ops for NodeFS), so Baton restores PostgreSQL's own fsync discipline:
 *
 * 1. NODEFS gets a real `stream_ops.fsync` that calls fsync(2) on the host file;
 * 2. PostgreSQL starts with fsync=on and wal_sync_method=fsync (fdatasync stays a no-op in
 *    Emscripten, open_sync crashes at start-up);
 * 3. the data directory is fsynced once after opening, because PGlite copies initdb's output
 *    into a new directory without syncing it.
 *
 * Measured cost: about 0.2 to 0.4 ms per commit on this machine's disk (one flush per commit).
 * The patch reaches into an Emscripten internal, so `openDurablePglite` checks that it fired
 * and refuses to run when a PGlite upgrade has made it ineffective.
 */
export const durableStartParams: string[] = [
  ...PGlite.defaultStartParams.filter((p) => p !== '-F'),
  '-c', 'fsync=on',
  '-c', 'wal_sync_method=fsync',
  '-c', 'synchronous_commit=on',
];

interface EmscriptenStream {
  nfd?: number;
  node: unknown;
}

interface EmscriptenNodefs {
  stream_ops?: { fsync?: (stream: EmscriptenStream) => number };
  realPath(node: unknown): string;
}

type InitResult = Awaited<ReturnType<NodeFS['init']>>;

/** NodeFS whose fsync reaches the disk; counts the fsyncs so the self-check can see them. */
class FsyncingNodeFS extends NodeFS {
  hostFsyncs = 0;

  override async init(pg: PGlite, opts: Parameters<NodeFS['init']>[1]): Promise<InitResult> {
    const { emscriptenOpts } = await super.init(pg, opts);
    const patch = (mod: { NODEFS?: EmscriptenNodefs }): void => {
      const nodefs = mod.NODEFS;
      if (!nodefs?.stream_ops) throw new Error('durable PGlite: Module.NODEFS is missing; PGlite internals changed');
      nodefs.stream_ops.fsync = (stream) => {
        this.hostFsyncs++;
        if (typeof stream.nfd === 'number') fsyncSync(stream.nfd);
        else fsyncPath(nodefs.realPath(stream.node));
        return 0;
      };
    };
    const preRun = [...(emscriptenOpts.preRun ?? []), patch] as typeof emscriptenOpts.preRun;
    return { emscriptenOpts: { ...emscriptenOpts, preRun } };
  }
}

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** fsync every file and directory under `dir`, then `dir`'s parent (so `dir` itself is durable). */
function fsyncTree(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) fsyncTree(path);
    else if (entry.isFile()) fsyncPath(path);
  }
  fsyncPath(dir);
}

export interface DurablePglite {
  db: PGlite;
  /** Host fsyncs so far: the test of durability reads it. */
  hostFsyncs(): number;
}

export async function openDurablePglite(dataDir: string, options: { loadDataDir?: Blob } = {}): Promise<DurablePglite> {
  // NodeFS creates only the last directory: a fresh checkout has no ./.baton yet.
  mkdirSync(dataDir, { recursive: true });
  const fs = new FsyncingNodeFS(dataDir);
  const db = await PGlite.create({ fs, startParams: durableStartParams, ...options });
  fsyncTree(dataDir);
  fsyncPath(dirname(resolve(dataDir)));
  const rows = (await db.query<{ name: string; setting: string }>("SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'wal_sync_method', 'synchronous_commit')")).rows;
  const settings = Object.fromEntries(rows.map((r) => [r.name, r.setting]));
  // PostgreSQL fsyncs postmaster.pid while starting, so a working patch has fired by now.
  if (fs.hostFsyncs === 0 || settings.fsync !== 'on' || settings.wal_sync_method !== 'fsync' || settings.synchronous_commit !== 'on') {
    await db.close();
    throw new Error(`durable PGlite self-check failed (${JSON.stringify({ hostFsyncs: fs.hostFsyncs, ...settings })}); PGlite internals changed, see docs/embedded-store.md`);
  }
  return { db, hostFsyncs: () => fs.hostFsyncs };
}
