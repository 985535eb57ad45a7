import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, stopServerProcess } from './support/server-process';

/**
 * @baton-coordination/server as a stranger gets it: its `npm pack` tarball (built by `npm run
 * build`, which `npm test` runs first) installed into a scratch project outside this repository,
 * then started by its binary through npx, with nothing of the workspace beside it: the bundle
 * must carry its migrations, the embedded store's template and the console.
 */

const run = promisify(execFile);
const root = new URL('..', import.meta.url).pathname;

describe('@baton-coordination/server from its npm pack tarball, outside the workspace', () => {
  let scratch: string;
  let files: string[];

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'baton-server-user-'));
    const { stdout: packed } = await run('npm', ['pack', '--workspace', '@baton-coordination/server', '--pack-destination', scratch, '--json'], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
    const [tarball] = JSON.parse(packed) as [{ filename: string; files: { path: string }[] }];
    files = tarball.files.map((f) => f.path);
    await writeFile(join(scratch, 'package.json'), JSON.stringify({ name: 'baton-server-user', private: true, dependencies: { '@baton-coordination/server': `file:./${tarball.filename}` } }));
    // The dependencies come from npm's cache, where this repository's install put them: no network needed.
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: scratch });
  }, 180_000);
  afterAll(async () => {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('ships the compiled server, its binary, migrations, template database and console, and no sources', () => {
    expect(files).toEqual(expect.arrayContaining(['README.md', 'LICENSE', 'package.json', 'bin/baton-server.mjs', 'dist/main.js', 'dist/cli.js', 'dist/console/index.html', 'dist/migrations/001_init.sql']));
    expect(files.some((f) => f.startsWith('dist/pglite-template/'))).toBe(true);
    expect(files.filter((f) => f.startsWith('src/') || f.endsWith('.test.js') || f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
  });

  it('answers --help through npx by its binary name, exit 0', async () => {
    const { stdout } = await run('npx', ['--no-install', 'baton-server', '--help'], { cwd: scratch });
    expect(stdout).toContain('Usage: baton-server');
    expect(stdout).toMatch(/^ {2}start /m);
  }, 60_000);

  it('starts on an empty embedded store, prints a working key, serves the console, and drains on SIGTERM', async () => {
    const dataDir = join(scratch, 'data');
    // The binary npx runs, started directly: a supervisor's SIGTERM must reach the server itself
    // (npx does not hand it on).
    const bin = join(scratch, 'node_modules/.bin/baton-server');
    const server = await startServerProcess({ PORT: '0', BATON_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'info' }, { command: [bin], cwd: scratch });
    try {
      await new Promise((r) => setTimeout(r, 200)); // the banner follows the "serving" log line
      const space = /export BATON_SPACE=(\S+)/.exec(server.output())?.[1];
      const key = /export BATON_KEY=(\S+)/.exec(server.output())?.[1];
      expect(key).toMatch(/^bk_/);
      const created = await fetch(`${server.address}/v1/spaces/${space}/mailboxes`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'm1' },
        body: JSON.stringify({ name: 'installed' }),
      });
      expect(created.status).toBe(201);
      const page = await fetch(`${server.address}/console/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<script type="module"');
      expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    } finally {
      expect(await stopServerProcess(server.child)).toBe(0);
    }
    expect(server.output()).toContain('drained');
  }, 180_000);
});
