import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { copyFile, cp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { fsyncPath, fsyncTree } from './fsync-tree';

/**
 * A new embedded data directory starts as a copy of a template: a database that PGlite's initdb
 * made at build time (`npm run build` writes server/dist/pglite-template/). Left to itself,
 * PGlite runs initdb at every first start, in a second PGlite instance with a third WebAssembly
 * module, then copies the result over: most of a first start's time and over half its memory
 * (docs/embedded-store.md, "Start-up", has the figures). A copy of files costs a fraction.
 *
 * The template is used only when PGlite's own version made it (its marker says which): a
 * template left from another PGlite, or none (running from source), means PGlite's initdb, as
 * before. The copy is made durable before it counts: PG_VERSION, by which PGlite tells a
 * database from an empty directory, is written last, after every other file and directory has
 * been fsynced; a copy cut short by a crash is copied again at the next start.
 */
export const builtTemplateDir = fileURLToPath(new URL('./pglite-template/', import.meta.url));

const markerFile = 'baton-template.json';
const databaseMarkerFile = 'PG_VERSION';

/** The version of the @electric-sql/pglite package installed here. */
export function installedPgliteVersion(): string {
  // The package's exports do not include package.json: find it beside its entry point.
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const manifest = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')) as { name: string; version: string };
  if (manifest.name !== '@electric-sql/pglite') throw new Error(`expected @electric-sql/pglite's package.json beside ${entry}, found ${manifest.name}`);
  return manifest.version;
}

/** Whether `dir` holds a template made by the PGlite installed here. */
export function usableTemplate(dir: string): boolean {
  try {
    const marker = JSON.parse(readFileSync(join(dir, markerFile), 'utf8')) as { pglite?: unknown };
    return marker.pglite === installedPgliteVersion() && existsSync(join(dir, databaseMarkerFile));
  } catch {
    return false;
  }
}

/** Build time: a fresh database in `dir` (replacing what is there), shut down cleanly, then its marker. */
export async function writePgliteTemplate(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const db = await PGlite.create({ dataDir: dir });
  await db.close();
  writeFileSync(join(dir, markerFile), `${JSON.stringify({ pglite: installedPgliteVersion() })}\n`);
}

/** Copies the template into `dataDir`, which holds no database yet, and makes the copy durable. */
export async function seedFromTemplate(templateDir: string, dataDir: string): Promise<void> {
  const skipped = new Set([markerFile, databaseMarkerFile]);
  await cp(templateDir, dataDir, { recursive: true, force: true, filter: (path) => !skipped.has(relative(templateDir, path)) });
  await fsyncTree(dataDir);
  await copyFile(join(templateDir, databaseMarkerFile), join(dataDir, databaseMarkerFile));
  await fsyncPath(join(dataDir, databaseMarkerFile));
  await fsyncPath(dataDir);
  await fsyncPath(dirname(resolve(dataDir)));
}
