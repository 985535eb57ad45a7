import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SystemClock } from '@baton/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLiveServer, type LiveServer } from '../support/live-server';

/**
 * @baton/runtime as a stranger gets it: its `npm pack` tarball (built by `npm run build`, which
 * `npm test` runs first) installed into a scratch project outside this repository, a worker
 * written against it type-checked by `tsc` under Node's own module rules (nodenext), compiled,
 * and run as its own process against a live server, where it completes a task.
 */

const run = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;
const tsc = join(root, 'node_modules/typescript/bin/tsc');

/** The user's worker: only the package's public API, imported by its name. */
const workerSource = `
import { createClient, createWorker, type DeliveryHandler } from '@baton/runtime';

const client = createClient({ baseUrl: process.env.BATON_URL!, spaceId: process.env.BATON_SPACE!, apiKey: process.env.BATON_KEY! });
const mailbox = await client.createMailbox({ name: 'packaged' }, { idempotencyKey: 'packaged-mailbox' });
const scopeId = '00000000-0000-4000-8000-0000000000aa';
const submitted = await client.submitTask({ scopeId, mailboxId: mailbox.id, taskKey: 'packaged-1', input: 'hello' });

const handler: DeliveryHandler = async ({ delivery }) => String(delivery.input).toUpperCase();
const worker = createWorker({
  client, mailboxId: mailbox.id, scopeId, holder: 'packaged-worker', concurrency: 2, leaseSeconds: 30, handler,
  onEvent: (event) => {
    if (event.type === 'completed') void worker.stop();
  },
});
worker.start();
await worker.done;
const task = await client.getTask(submitted.taskId);
console.log(JSON.stringify({ taskId: task.id, state: task.state, outcome: task.outcome }));
`;

describe('@baton/runtime from its npm pack tarball, outside the workspace', () => {
  let project: string;
  let server: LiveServer;

  beforeAll(async () => {
    project = await mkdtemp(join(tmpdir(), 'baton-runtime-user-'));
    server = await startLiveServer({ clock: new SystemClock(), plan: 'TEAM', name: 'packaged' });
  });
  afterAll(async () => {
    await server?.close();
    if (project) await rm(project, { recursive: true, force: true });
  });

  it('installs with zod as its only dependency, type-checks a worker with tsc, and the worker completes a task', async () => {
    const { stdout: packed } = await run('npm', ['pack', '--workspace', '@baton/runtime', '--pack-destination', project, '--json'], { cwd: root });
    const [{ filename, files }] = JSON.parse(packed) as [{ filename: string; files: { path: string }[] }];
    // What ships: the build and the README, not the sources or the tests.
    expect(files.map((f) => f.path).sort()).toEqual(['README.md', 'dist/index.d.ts', 'dist/index.js', 'dist/index.js.map', 'package.json']);

    const nodeTypes = JSON.parse(await readFile(join(root, 'node_modules/@types/node/package.json'), 'utf8')).version as string;
    await writeFile(
      join(project, 'package.json'),
      JSON.stringify({ name: 'baton-runtime-user', private: true, type: 'module', dependencies: { '@baton/runtime': `file:./${filename}` }, devDependencies: { '@types/node': nodeTypes } }),
    );
    // zod and @types/node come from npm's cache when they are in it, as they are after this repository's install.
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: project });
    const installed = JSON.parse(await readFile(join(project, 'node_modules/@baton/runtime/package.json'), 'utf8'));
    expect(Object.keys(installed.dependencies ?? {})).toEqual(['zod']);

    await writeFile(join(project, 'worker.ts'), workerSource);
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, types: ['node'], outDir: 'dist', skipLibCheck: false }, files: ['worker.ts'] }),
    );
    await run(process.execPath, [tsc, '-p', project], { cwd: project });

    const { stdout } = await run(process.execPath, [join(project, 'dist/worker.js')], {
      cwd: project,
      env: { ...process.env, BATON_URL: server.baseUrl, BATON_SPACE: server.spaceId, BATON_KEY: server.apiKey },
      timeout: 30_000,
    });
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toMatchObject({ state: 'SUCCEEDED', outcome: 'HELLO' });
  }, 120_000);
});
