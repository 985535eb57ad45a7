import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SystemClock } from '@baton/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLiveServer, type LiveServer } from '../support/live-server';

/**
 * @baton-coordination/runtime as a stranger gets it: its `npm pack` tarball (built by `npm run build`, which
 * `npm test` runs first) installed into two scratch projects outside this repository, an ES module
 * one and a CommonJS one. In each, a producer and a worker written against the package's typed API
 * are type-checked by `tsc --strict` under Node's module rules (nodenext) and under a bundler's
 * (bundler), the CommonJS one also under TypeScript's old node10 resolution; then compiled, and
 * run as processes against a live server: the producer submits tasks and awaits their outcomes,
 * the worker completes them.
 */

const run = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;
const tsc = join(root, 'node_modules/typescript/bin/tsc');

/** What producer and worker agree on: the task's input and outcome. */
const tasksSource = `
export interface Shout { text: string }
export interface Shouted { upper: string; length: number }
`;

/** The user's worker: only the package's public API, imported by its name; no top-level await, so one source serves both module kinds. */
const workerSource = `
import { createClient, createWorker, type DeliveryHandler } from '@baton-coordination/runtime';
import type { Shout, Shouted } from './tasks.js';

const shout: DeliveryHandler<Shout, Shouted> = async ({ delivery }) => ({ upper: delivery.input.text.toUpperCase(), length: delivery.input.text.length });

async function main(): Promise<void> {
  const client = createClient({ baseUrl: process.env.BATON_URL!, spaceId: process.env.BATON_SPACE!, apiKey: process.env.BATON_KEY! });
  const mailbox = await client.createMailbox({ name: process.env.MAILBOX! });
  const expected = Number(process.env.EXPECTED);
  let completed = 0;
  const worker = createWorker({
    client, mailboxId: mailbox.id, scopeId: process.env.BATON_SCOPE!, holder: 'packaged-worker', concurrency: 4, leaseSeconds: 30, handler: shout,
    onEvent: (event) => {
      if (event.type === 'admitted') console.log('admitted', event.delivery.input.text);
      if (event.type === 'completed' && ++completed === expected) void worker.stop();
    },
  });
  worker.start();
  await worker.done;
  console.log(JSON.stringify({ completed: worker.stats.completed }));
}
main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
`;

/** The user's producer: submits a batch, awaits each outcome, and shows a typed error code. */
const producerSource = `
import { BatonApiError, createClient, submitAndAwait, submitMany, type ApiErrorCode, type TaskView } from '@baton-coordination/runtime';
import type { Shout, Shouted } from './tasks.js';

async function main(): Promise<void> {
  const client = createClient({ baseUrl: process.env.BATON_URL!, spaceId: process.env.BATON_SPACE!, apiKey: process.env.BATON_KEY! });
  const mailbox = await client.createMailbox({ name: process.env.MAILBOX! });
  const scopeId = process.env.BATON_SCOPE!;
  const texts = ['hello', 'from', 'a stranger'];
  const bodies = texts.map((text, i) => ({ scopeId, mailboxId: mailbox.id, taskKey: process.env.MAILBOX + '-' + i, input: { text } }));
  const submitted = await submitMany<Shout>(client, bodies);
  if (!submitted.every((result) => result.ok)) throw new Error('a submit was refused: ' + JSON.stringify(submitted));
  // Create-or-join by taskKey: awaiting the same bodies joins the tasks just submitted.
  const tasks: TaskView<Shout, Shouted>[] = await Promise.all(bodies.map((body) => submitAndAwait<Shout, Shouted>(client, body, { timeoutMs: 60_000 })));
  let code: ApiErrorCode | null = null;
  try {
    await client.getTask('00000000-0000-4000-8000-000000000000');
  } catch (error) {
    if (error instanceof BatonApiError) code = error.code;
  }
  console.log(JSON.stringify({ outcomes: tasks.map((task) => ({ state: task.state, upper: task.outcome?.upper ?? null })), code }));
}
main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
`;

type ModuleKind = 'module' | 'commonjs';

const strictOptions = { target: 'ES2022', strict: true, types: ['node'], skipLibCheck: false, forceConsistentCasingInFileNames: true };
// The package's declarations are checked in full (skipLibCheck false) once per project, under
// nodenext; bundler and node10 only resolve the same files another way, so they skip that part.
const tsconfigs = {
  nodenext: { compilerOptions: { ...strictOptions, module: 'NodeNext', moduleResolution: 'NodeNext', outDir: 'dist' }, files: ['tasks.ts', 'worker.ts', 'producer.ts'] },
  bundler: { compilerOptions: { ...strictOptions, skipLibCheck: true, module: 'ESNext', moduleResolution: 'Bundler', noEmit: true }, files: ['tasks.ts', 'worker.ts', 'producer.ts'] },
  // TypeScript's old resolution, without exports maps: it finds the package by main and types.
  // esModuleInterop as `tsc --init` sets it: zod's own declarations need it under node10.
  node10: { compilerOptions: { ...strictOptions, module: 'CommonJS', moduleResolution: 'Node10', esModuleInterop: true, skipLibCheck: true, noEmit: true }, files: ['tasks.ts', 'worker.ts', 'producer.ts'] },
};

describe('@baton-coordination/runtime from its npm pack tarball, outside the workspace', () => {
  let scratch: string;
  let tarball: string;
  let server: LiveServer;

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'baton-runtime-user-'));
    server = await startLiveServer({ clock: new SystemClock(), plan: 'TEAM', name: 'packaged' });
    const { stdout: packed } = await run('npm', ['pack', '--workspace', '@baton-coordination/runtime', '--pack-destination', scratch, '--json'], { cwd: root });
    const [{ filename, files }] = JSON.parse(packed) as [{ filename: string; files: { path: string }[] }];
    tarball = join(scratch, filename);
    // What ships: both builds with their declarations, the README and the licence; not the sources or the tests.
    expect(files.map((f) => f.path).sort()).toEqual([
      'LICENSE', 'README.md', 'dist/index.cjs', 'dist/index.cjs.map', 'dist/index.d.cts', 'dist/index.d.ts', 'dist/index.js', 'dist/index.js.map', 'package.json',
    ]);
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  async function project(kind: ModuleKind): Promise<string> {
    const dir = join(scratch, kind);
    await mkdir(dir);
    const nodeTypes = JSON.parse(await readFile(join(root, 'node_modules/@types/node/package.json'), 'utf8')).version as string;
    await writeFile(join(dir, 'package.json'), JSON.stringify({ name: `baton-runtime-user-${kind}`, private: true, type: kind, dependencies: { '@baton-coordination/runtime': `file:${tarball}` }, devDependencies: { '@types/node': nodeTypes } }));
    // zod, standardwebhooks and @types/node come from npm's cache, where this repository's install put them: no network needed.
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: dir });
    await writeFile(join(dir, 'tasks.ts'), tasksSource);
    await writeFile(join(dir, 'worker.ts'), workerSource);
    await writeFile(join(dir, 'producer.ts'), producerSource);
    for (const [name, config] of Object.entries(tsconfigs)) await writeFile(join(dir, `tsconfig.${name}.json`), JSON.stringify(config));
    return dir;
  }

  it('is clean under arethetypeswrong: every resolution mode finds JavaScript and types of its own kind', async () => {
    const attw = join(root, 'node_modules/@arethetypeswrong/cli/dist/index.js');
    const { stdout } = await run(process.execPath, [attw, tarball, '--format', 'json'], { cwd: scratch });
    const report = JSON.parse(stdout) as { problems: Record<string, unknown>; analysis: { entrypoints: Record<string, { resolutions: Record<string, { resolution?: { fileName: string } }> }> } };
    expect(report.problems).toEqual({});
    const resolved = Object.fromEntries(Object.entries(report.analysis.entrypoints['.']!.resolutions).map(([mode, r]) => [mode, r.resolution?.fileName.replace(/^.*\/dist\//, '')]));
    expect(resolved).toEqual({ node10: 'index.d.cts', 'node16-cjs': 'index.d.cts', 'node16-esm': 'index.d.ts', bundler: 'index.d.ts' });
  }, 60_000);

  const cases: { kind: ModuleKind; build: string }[] = [
    { kind: 'module', build: 'dist/index.js' },
    { kind: 'commonjs', build: 'dist/index.cjs' },
  ];

  it.each(cases)('a $kind project installs it, type-checks under nodenext and bundler (and node10 for commonjs), and runs a producer and a worker', async ({ kind, build }) => {
    const dir = await project(kind);
    const installed = JSON.parse(await readFile(join(dir, 'node_modules/@baton-coordination/runtime/package.json'), 'utf8'));
    expect(Object.keys(installed.dependencies ?? {}).sort()).toEqual(['standardwebhooks', 'zod']);

    // Node picks the build of the project's own kind: require gets CommonJS, import the ES module.
    const resolver = kind === 'commonjs' ? ['-p', "require.resolve('@baton-coordination/runtime')"] : ['--input-type=module', '-e', "console.log(import.meta.resolve('@baton-coordination/runtime'))"];
    const { stdout: resolved } = await run(process.execPath, resolver, { cwd: dir });
    expect(resolved.trim().endsWith(`/node_modules/@baton-coordination/runtime/${build}`)).toBe(true);

    // tsc fails (and run rejects) on any type error, in the user's code or in the package's declarations.
    await run(process.execPath, [tsc, '-p', 'tsconfig.bundler.json'], { cwd: dir });
    if (kind === 'commonjs') await run(process.execPath, [tsc, '-p', 'tsconfig.node10.json'], { cwd: dir });
    await run(process.execPath, [tsc, '-p', 'tsconfig.nodenext.json'], { cwd: dir });
    const compiled = await readFile(join(dir, 'dist/worker.js'), 'utf8');
    expect(compiled).toContain(kind === 'commonjs' ? 'require("@baton-coordination/runtime")' : "from '@baton-coordination/runtime'");

    const env = { ...process.env, BATON_URL: server.baseUrl, BATON_SPACE: server.spaceId, BATON_KEY: server.apiKey, BATON_SCOPE: randomUUID(), MAILBOX: `packaged-${kind}`, EXPECTED: '3' };
    const worker = spawn(process.execPath, [join(dir, 'dist/worker.js')], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let workerOut = '';
    let workerErr = '';
    worker.stdout.on('data', (chunk: Buffer) => (workerOut += chunk.toString()));
    worker.stderr.on('data', (chunk: Buffer) => (workerErr += chunk.toString()));
    const workerExit = new Promise<number | null>((resolve) => worker.on('exit', (code) => resolve(code)));
    try {
      const { stdout } = await run(process.execPath, [join(dir, 'dist/producer.js')], { cwd: dir, env, timeout: 90_000 });
      expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({
        outcomes: [
          { state: 'SUCCEEDED', upper: 'HELLO' },
          { state: 'SUCCEEDED', upper: 'FROM' },
          { state: 'SUCCEEDED', upper: 'A STRANGER' },
        ],
        code: 'NOT_FOUND',
      });
      expect(await workerExit, workerErr).toBe(0);
      expect(JSON.parse(workerOut.trim().split('\n').at(-1)!)).toEqual({ completed: 3 });
    } finally {
      if (worker.exitCode === null) worker.kill('SIGKILL');
    }
  }, 300_000);
});
