import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SystemClock } from '@baton/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLiveServer, type LiveServer } from '../support/live-server';

/**
 * Every ```ts block of docs/runtime.md and runtime/README.md, type-checked under `strict` and run
 * against a live server, so a snippet that stops working fails CI. A block is run as written,
 * between a prelude that defines what the prose around it assumes (a client, a delivery, a
 * worker to do the work) and a postlude that checks what it did; both import the runtime as
 * `harness` so they never clash with the snippet's own imports. A block without a harness
 * below fails the test: a new snippet gets one when it is written.
 *
 * The snippets read the variables the server's start-up banner prints: BATON_URL, BATON_SPACE,
 * BATON_KEY and BATON_SCOPE.
 */
const root = new URL('../..', import.meta.url).pathname;
const exec = promisify(execFile);

interface Snippet {
  id: string;
  code: string;
}

function snippetsOf(path: string): Snippet[] {
  const text = readFileSync(join(root, path), 'utf8');
  return [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match, n) => ({ id: `${path}#${n + 1}`, code: match[1]! }));
}

const client = `const client = harness.createClient({ baseUrl: process.env.BATON_URL!, apiKey: process.env.BATON_KEY!, spaceId: process.env.BATON_SPACE! });\n`;
const scope = `const scopeId = process.env.BATON_SCOPE!;\n`;
const mailbox = `const { id: mailboxId } = await client.createMailbox({ name: 'snippets' });\n`;
/** A worker that upper-cases `{text}` inputs (as the README's Shout) on `scopeId`. */
const shouter = (box: string, scopeVar: string) =>
  `const helper = harness.createWorker<{ text: string }, { upper: string }>({ client, mailboxId: ${box}, scopeId: ${scopeVar}, holder: 'snippet-helper', concurrency: 4, leaseSeconds: 30, logger: harness.silentLogger, handler: async ({ delivery }) => ({ upper: delivery.input.text.toUpperCase() }) });\nhelper.start();\n`;
/** A delivery of a fresh task, admitted on `scopeId`, with the client as `varName`. */
const admitted = (varName: string) =>
  `await ${varName}.submitTask({ scopeId, mailboxId, taskKey: harness.randomKey(), input: 'x' });\nconst delivery = (await ${varName}.admit({ scopeId, mailboxId, holder: 'snippet', holderSession: harness.randomKey(), leaseSeconds: 30, waitMs: 5_000 }))!;\n`;
const check = (condition: string, what: string) => `if (!(${condition})) throw new Error(${JSON.stringify(`snippet check failed: ${what}`)});\n`;

/** What each snippet needs around it, by the snippet's file and place; `file` names a snippet written as a module of its own. */
const harnesses: Record<string, { prelude?: string; postlude?: string; file?: string }> = {
  'docs/runtime.md#1': {
    postlude: `const task = await harness.submitAndAwait(client, { scopeId: process.env.BATON_SCOPE!, mailboxId, taskKey: harness.randomKey(), input: 'hello' });\n${check("task.outcome === 'HELLO'", 'the worker upper-cased the input')}await worker.stop();\n`,
  },
  'docs/runtime.md#2': {
    prelude: `${client}const { id: mailboxId } = await client.createMailbox({ name: 'reviews' });\nconst parentScopeId = process.env.BATON_SCOPE!;\nconst drafts = [{ text: 'a' }, { text: 'b' }];\nconst judge = async (outcome: unknown): Promise<boolean> => outcome !== null;\n${shouter('mailboxId', 'parentScopeId')}`,
    postlude: `${check("run.group.outcome === 'SUCCEEDED'", 'the group decided SUCCEEDED')}await helper.stop();\n`,
  },
  'docs/runtime.md#3': {
    prelude: `${client}${scope}${mailbox}await client.submitTask({ scopeId, mailboxId, taskKey: harness.randomKey() });\nconst load = async (): Promise<string | undefined> => undefined;\nconst save = (_cursor: string): void => {};\nlet seen = 0;\nconst handle = (_event: unknown): void => { seen++; stop.abort(); };\n`,
    postlude: check('seen === 1', 'the watch saw the task submitted and stopped on abort'),
  },
  'docs/runtime.md#4': { prelude: scope, postlude: check("reservation.amountMinor === '2500'", 'the reservation holds 25.00') },
  'docs/runtime.md#5': {
    prelude: `const baton = harness.createClient({ baseUrl: process.env.BATON_URL!, apiKey: process.env.BATON_KEY!, spaceId: process.env.BATON_SPACE! });\nimport { hasCode } from '@baton-coordination/runtime';\n${scope}const { id: mailboxId } = await baton.createMailbox({ name: 'snippets' });\n${admitted('baton')}async function finish(): Promise<void> {\n`,
    postlude: `}\nawait finish();\nawait finish(); // the second complete answers LEASE_LOST, which the snippet swallows\n`,
  },
  'docs/runtime.md#6': {
    prelude: `import { createClient, fetchTransport, type Transport } from '@baton-coordination/runtime';\nconst baseUrl = process.env.BATON_URL!, apiKey = process.env.BATON_KEY!, spaceId = process.env.BATON_SPACE!;\n`,
    postlude: `const box = await baton.createMailbox({ name: 'lossy' });\n${check("lost && typeof box.id === 'string'", 'the lost reply was retried with the same Idempotency-Key')}`,
  },
  'runtime/README.md#1': { file: 'tasks.ts' },
  'runtime/README.md#2': {
    postlude: `const task = await harness.submitAndAwait<Shout, Shouted>(client, { scopeId: process.env.BATON_SCOPE!, mailboxId: mailbox.id, taskKey: harness.randomKey(), input: { text: 'hi' } });\n${check("task.outcome?.upper === 'HI'", 'the worker shouted')}await worker.stop();\n`,
  },
  'runtime/README.md#3': {
    prelude: `{\n${client}const { id } = await client.createMailbox({ name: 'shouts' });\nconst scopeId = process.env.BATON_SCOPE!;\n${shouter('id', 'scopeId')}harness.onExit(() => helper.stop());\n}\n`,
    postlude: `${check("task.outcome?.upper === 'HELLO' && results.every((r) => r.ok)", 'the tasks were submitted and awaited')}await harness.runExitHooks();\n`,
  },
  'runtime/README.md#4': {
    prelude: `${client}${scope}${mailbox}${admitted('client')}async function finish(): Promise<void> {\n`,
    postlude: `}\nawait finish();\nawait finish();\n${check('harness.isRetryable !== undefined && harness.isTransportFailure !== undefined', 'the imports exist')}`,
  },
  'runtime/README.md#5': {
    prelude: `${client}${scope}const plan = [1, 2];\nconst applied: number[] = [];\nconst deployStore = { apply: async (step: number, _o: { fencingToken: number }) => void applied.push(step) };\n`,
    postlude: `${check('applied.length === 2 && ClaimHeldError !== undefined && ClaimLostError !== undefined', 'every step ran under the claim')}`,
  },
  'runtime/README.md#6': { prelude: `${client}${scope}${mailbox}`, postlude: check("typeof timer.id === 'string' && firedTimerIdOf !== undefined", 'the timer was armed') },
  'runtime/README.md#7': {
    prelude: `import { sleepUntil } from '@baton-coordination/runtime';\n${client}${mailbox}const state = { retrySleepScope: harness.randomKey() };\n`,
    postlude: check('(payload as { retry: number }).retry === 1', 'the sleep answered the payload once the timer fired'),
  },
  'runtime/README.md#8': {
    prelude: `${client}${mailbox}const parentScopeId = harness.randomKey();\nawait client.createRun({ scopeId: parentScopeId, name: 'parent' });\nconst input = { text: 'child' };\nconst signal = new AbortController().signal;\nconst summarise = async (scopeId: string, _signal: AbortSignal): Promise<string> => scopeId;\n`,
    postlude: check("typeof summary === 'string'", 'the child run answered'),
  },
  'runtime/README.md#9': {
    prelude: `${client}${scope}${mailbox}await client.submitTask({ scopeId, mailboxId, taskKey: harness.randomKey() });\nconst save = (_cursor: string): void => stop.abort();\n`,
  },
  'runtime/README.md#10': {
    prelude: `import { Webhook } from 'standardwebhooks';\nconst secret = 'whsec_' + Buffer.from('snippet-secret-of-32-bytes-long!').toString('base64');\nprocess.env.WEBHOOK_SECRET = secret;\n`,
    postlude: `const body = JSON.stringify({ eventId: 'e1', type: 'task.completed' });\nconst headers = { 'webhook-id': 'msg-1', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)) };\nconst signature = new Webhook(secret).sign('msg-1', new Date(), body);\nconst good = await fetch(\`http://127.0.0.1:\${process.env.PORT}\`, { method: 'POST', headers: { ...headers, 'webhook-signature': signature }, body });\nconst bad = await fetch(\`http://127.0.0.1:\${process.env.PORT}\`, { method: 'POST', headers: { ...headers, 'webhook-signature': 'v1,AAAA' }, body });\n${check('good.status === 200 && bad.status === 400', 'a signed delivery is accepted and a forged one refused')}process.exit(0);\n`,
  },
};

/** What every prelude may use, imported as `harness`. */
const harnessModule = `export * from '@baton-coordination/runtime';
import { randomUUID } from 'node:crypto';
export const randomKey = (): string => randomUUID();
const hooks: (() => Promise<unknown>)[] = [];
export const onExit = (hook: () => Promise<unknown>): void => void hooks.push(hook);
export const runExitHooks = async (): Promise<void> => void (await Promise.all(hooks.map((hook) => hook())));
`;

const snippets = [...snippetsOf('docs/runtime.md'), ...snippetsOf('runtime/README.md')];
let server: LiveServer;
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  server = await startLiveServer({ clock: new SystemClock(), plan: 'ENTERPRISE', name: 'doc-snippets' });
  // As `npm start` runs it: the sweeps that fire timers (the README's sleepUntil waits on one).
  server.baton.background.start();
  env = { BATON_URL: server.baseUrl, BATON_SPACE: server.spaceId, BATON_KEY: server.apiKey, BATON_SCOPE: randomUUID(), PORT: String(await freePort()) };
  // Inside the repository, so '@baton-coordination/runtime' resolves to the workspace package as a user's install would.
  dir = mkdtempSync(join(root, 'test/runtime/.snippets-'));
  writeFileSync(join(dir, 'harness.ts'), harnessModule);
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', noEmit: true, skipLibCheck: true, types: ['node'] }, include: ['*.ts'] }));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  for (const [n, snippet] of snippets.entries()) {
    const harness = harnesses[snippet.id] ?? {};
    const file = harness.file ?? `snippet-${n + 1}.ts`;
    // A snippet's imports go first: its prelude may open a function around its body.
    const lines = snippet.code.split('\n');
    const imports = lines.filter((line) => line.startsWith('import ')).join('\n');
    const body = lines.filter((line) => !line.startsWith('import ')).join('\n');
    const text = harness.file ? snippet.code : `import * as harness from './harness.js';\n${imports}\n${harness.prelude ?? ''}${body}${harness.postlude ?? ''}`;
    writeFileSync(join(dir, file), `// ${snippet.id}\n${text}`);
  }
}, 120_000);

afterAll(async () => {
  if (dir && !process.env.KEEP_SNIPPETS) rmSync(dir, { recursive: true, force: true });
  server?.baton.background.stop();
  await server?.close();
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
    probe.once('error', reject);
  });
}

describe('docs snippets', () => {
  it('every ts snippet of docs/runtime.md and runtime/README.md has a harness, and every harness a snippet', () => {
    expect(snippets.map((s) => s.id).sort()).toEqual(Object.keys(harnesses).sort());
  });

  it('every snippet type-checks under strict', async () => {
    const tsc = join(root, 'node_modules/.bin/tsc');
    const result = await exec(tsc, ['-p', dir]).then(
      () => '',
      (error: { stdout: string }) => error.stdout,
    );
    expect(result).toBe('');
  }, 120_000);

  it.each(snippets.filter((s) => harnesses[s.id]?.file === undefined).map((s, n) => [s.id, n]))('%s runs against a live server', async (id) => {
    const n = snippets.findIndex((s) => s.id === id);
    const result = await exec(process.execPath, ['--import', 'tsx', join(dir, `snippet-${n + 1}.ts`)], { cwd: dir, env: { ...process.env, ...env }, timeout: 60_000 }).then(
      (r) => ({ code: 0, output: r.stdout + r.stderr }),
      (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, output: error.stdout + error.stderr }),
    );
    expect(result.output.split('\n').filter((line) => /Error|error:/.test(line))).toEqual([]);
    expect(result.code).toBe(0);
  }, 90_000);
});
