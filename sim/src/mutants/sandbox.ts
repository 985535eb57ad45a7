import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * A copy of the workspace sources, as committed at HEAD, where one mutant at a time is planted:
 * the repository's own files are never touched (Stryker may be planting its own in them). npm links the workspace packages (@baton/core and the rest) by
 * symlinks that a copy of node_modules would still point at the originals: the sandbox gets a
 * node_modules of its own that links every installed package back to the real one, except the
 * workspace packages, which it links to their copies.
 */

const packages = ['core', 'server', 'runtime', 'sim'];
const workspaceScopes = ['@baton', '@baton-coordination'];

export class Sandbox {
  private constructor(readonly dir: string) {}

  static build(root: string, dir: string): Sandbox {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const archive = execFileSync('git', ['archive', 'HEAD', 'package.json', 'tsconfig.json', ...packages], { cwd: root, maxBuffer: 1 << 30 });
    execFileSync('tar', ['-x', '-C', dir], { input: archive });
    for (const pkg of packages) {
      if (existsSync(join(root, pkg, 'node_modules'))) symlinkSync(join(root, pkg, 'node_modules'), join(dir, pkg, 'node_modules'));
    }
    const modules = join(dir, 'node_modules');
    mkdirSync(modules);
    for (const entry of readdirSync(join(root, 'node_modules'))) {
      if (!workspaceScopes.includes(entry)) {
        symlinkSync(join(root, 'node_modules', entry), join(modules, entry));
        continue;
      }
      mkdirSync(join(modules, entry));
      for (const name of readdirSync(join(root, 'node_modules', entry))) {
        const pkg = packages.find((p) => existsSync(join(dir, p, 'package.json')) && JSON.parse(readFileSync(join(dir, p, 'package.json'), 'utf8')).name === `${entry}/${name}`);
        const target = pkg ? join(dir, pkg) : join(root, 'node_modules', entry, name);
        symlinkSync(pkg ? relative(join(modules, entry), target) : target, join(modules, entry, name));
      }
    }
    return new Sandbox(dir);
  }

  /** The committed source of `file` (a path relative to the repository root). */
  source(file: string): string {
    return readFileSync(join(this.dir, file), 'utf8');
  }

  /** Plants `source` as `file` until the returned function restores the committed one. */
  plant(file: string, source: string): () => void {
    const path = join(this.dir, file);
    const original = readFileSync(path, 'utf8');
    writeFileSync(path, source);
    return () => writeFileSync(path, original);
  }
}
