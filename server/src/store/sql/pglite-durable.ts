import { closeSync, existsSync, fsyncSync, mkdirSync, openSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { NodeFS } from '@electric-sql/pglite/nodefs';
import { fsyncPath, fsyncTree } from './fsync-tree';
import { builtTemplateDir, seedFromTemplate, usableTemplate } from './pglite-template';

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
 * 3. a new data directory is fsynced once, because PGlite copies initdb's output into it
 *    without syncing it (a directory seeded from the template, pglite-template.ts, is fsynced
 *    as it is copied). An existing directory needs nothing: after a clean stop everything is
 *    on disk, and after a crash PostgreSQL's recovery fsyncs the whole directory itself
 *    (SyncDataDirectory, through the fsync of point 1: about 2,000 fsyncs at that open).
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
  // PostgreSQL's 128MB default is touched whole at start in WebAssembly memory: 110 MiB more
  // resident for a cache that a development database does not fill (docs/embedded-store.md).
  '-c', 'shared_buffers=32MB',
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
        else fsyncPathSync(nodefs.realPath(stream.node));
        return 0;
      };
    };
    const preRun = [...(emscriptenOpts.preRun ?? []), patch] as typeof emscriptenOpts.preRun;
    return { emscriptenOpts: { ...emscriptenOpts, preRun } };
  }
}

function fsyncPathSync(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export interface DurablePglite {
  db: PGlite;
  /** Host fsyncs so far: the test of durability reads it. */
  hostFsyncs(): number;
}

export interface DurableOpenOptions {
  /** Start a new directory from this dump (PGlite's loadDataDir) instead of a fresh database. */
  loadDataDir?: Blob;
  /** Start a new directory as a copy of this template (pglite-template.ts); the build's by default. */
  templateDir?: string;
}

export async function openDurablePglite(dataDir: string, options: DurableOpenOptions = {}): Promise<DurablePglite> {
  // NodeFS creates only the last directory: a fresh checkout has no ./.baton yet.
  mkdirSync(dataDir, { recursive: true });
  const existing = existsSync(join(dataDir, 'PG_VERSION'));
  const templateDir = options.templateDir ?? builtTemplateDir;
  const seeded = !existing && options.loadDataDir === undefined && usableTemplate(templateDir);
  if (seeded) await seedFromTemplate(templateDir, dataDir);
  const fs = new FsyncingNodeFS(dataDir);
  const load = options.loadDataDir === undefined ? {} : { loadDataDir: options.loadDataDir };
  const db = await PGlite.create({ fs, startParams: durableStartParams, ...load });
  if (!existing && !seeded) {
    await fsyncTree(dataDir);
    await fsyncPath(dirname(resolve(dataDir)));
  }
  const rows = (await db.query<{ name: string; setting: string }>("SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'wal_sync_method', 'synchronous_commit')")).rows;
  const settings = Object.fromEntries(rows.map((r) => [r.name, r.setting]));
  // PostgreSQL fsyncs postmaster.pid while starting, so a working patch has fired by now.
  if (fs.hostFsyncs === 0 || settings.fsync !== 'on' || settings.wal_sync_method !== 'fsync' || settings.synchronous_commit !== 'on') {
    await db.close();
    throw new Error(`durable PGlite self-check failed (${JSON.stringify({ hostFsyncs: fs.hostFsyncs, ...settings })}); PGlite internals changed, see docs/embedded-store.md`);
  }
  return { db, hostFsyncs: () => fs.hostFsyncs };
}
