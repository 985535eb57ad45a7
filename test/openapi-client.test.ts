import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { MemoryStore, SystemClock } from '@baton/core';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server';

/**
 * A client generated from the served document (openapi-typescript types, openapi-fetch calls)
 * compiles under strict TypeScript and makes a caller handle what the server really does:
 * admit's bodiless 204, the Idempotency-Key that POST /tasks requires, the error envelope.
 * test/http/contract-replies.test.ts checks the server's replies against the same document.
 */

const run = promisify(execFile);
const tsc = join(process.cwd(), 'node_modules/typescript/bin/tsc');
const tsx = join(process.cwd(), 'node_modules/tsx/dist/cli.mjs');

/** The TypeScript snippet of docs/api.md's section on generating a client. */
async function docsSnippet(): Promise<string> {
  const doc = await readFile(join(process.cwd(), 'docs/api.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## The OpenAPI document and a generated client'));
  const snippet = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (!snippet) throw new Error('docs/api.md has no TypeScript snippet in its client section');
  return snippet;
}

const compile = async (dir: string, files: string[], types: string[]): Promise<string> => {
  await writeFile(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', skipLibCheck: true, types }, files }),
  );
  return run(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')]).then(
    () => '',
    (error: { stdout: string }) => error.stdout || 'tsc failed',
  );
};

/** Calls a stranger would write against the generated types; each @ts-expect-error is a claim the types must keep. */
const clientSource = `
import createClient from 'openapi-fetch';
import type { components, operations, paths } from './baton-api.js';

type ErrorCode = components['schemas']['Error']['error']['code'];
type Admitted = operations['admitDelivery']['responses'][200]['content']['application/json'];

const client = createClient<paths>({ baseUrl: 'http://localhost:8080' });
const spaceId = 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d';
const scopeId = '7d3c2b1a-4e5f-4a6b-8c9d-0e1f2a3b4c5d';
const mailboxId = '3b1f6c9e-2d4a-4f8b-8c7e-5a6d9e0f1b2c';

export async function admitOnce(key: string): Promise<Admitted | ErrorCode | 'nothing ready'> {
  const { data, error, response } = await client.POST('/v1/spaces/{spaceId}/tasks/admit', {
    params: { path: { spaceId }, header: { 'Idempotency-Key': key } },
    body: { scopeId, mailboxId, holder: 'summarizer', holderSession: 'host1-31337', waitMs: 20000 },
  });
  if (error) return error.error.code;
  // @ts-expect-error admit answers 204 with no body when nothing is ready: data may be undefined
  data.token.length;
  if (data === undefined || response.status === 204) return 'nothing ready';
  const token: string = data.token;
  return token.length > 0 ? data : 'nothing ready';
}

export async function submit(key: string): Promise<string> {
  const body = { scopeId, mailboxId, taskKey: 'summarize-report-2026-11', input: { maxWords: 300 } };
  // @ts-expect-error POST /tasks requires the Idempotency-Key header
  await client.POST('/v1/spaces/{spaceId}/tasks', { params: { path: { spaceId } }, body });
  const { data, error } = await client.POST('/v1/spaces/{spaceId}/tasks', { params: { path: { spaceId }, header: { 'Idempotency-Key': key } }, body });
  if (error) {
    const code: ErrorCode = error.error.code;
    return code;
  }
  return data.taskId;
}

export async function recvMaybe(): Promise<string | undefined> {
  // recv takes the header optionally: no key is fine for the types, as for the server.
  const { data } = await client.POST('/v1/spaces/{spaceId}/mailboxes/{id}/recv', {
    params: { path: { spaceId, id: mailboxId } },
    body: { scopeId, holder: 'summarizer', holderSession: 'host1-31337' },
  });
  return data?.token;
}
`;

describe('a client generated from the OpenAPI document', () => {
  let server: TestServer;
  /** tsc's report on the generated types with client.ts and the docs snippet: empty when both compile. */
  let compiled: string;
  const dir = join(process.cwd(), '.tmp', `openapi-client-${process.pid}`);

  beforeAll(async () => {
    // The system clock: the snippet's long poll waits in real time.
    server = await startTestServer(new MemoryStore(), { clock: new SystemClock() });
    await mkdir(dir, { recursive: true });
    const doc = (await server.inject('GET', '/v1/openapi.json', {})).body;
    await writeFile(join(dir, 'baton-api.ts'), astToString(await openapiTS(doc)));
    await writeFile(join(dir, 'client.ts'), clientSource);
    await writeFile(join(dir, 'snippet.ts'), await docsSnippet());
    // One compile for both files: tsc over the generated types is the slow part.
    compiled = await compile(dir, ['client.ts', 'snippet.ts'], ['node']);
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('is generated by openapi-typescript and compiles with openapi-fetch under strict, handling 204 and the required Idempotency-Key', async () => {
    const types = await readFile(join(dir, 'baton-api.ts'), 'utf8');
    expect(types).toContain('admitDelivery: {');
    expect(types).toContain('"Idempotency-Key": string;');
    expect(compiled.split('\n').filter((line) => line.includes('client.ts'))).toEqual([]);
    expect(compiled).toBe('');
  }, 120_000);

  it("docs/api.md's client snippet compiles under strict and, run against a live server, admits a task and then handles the 204", async () => {
    expect(compiled.split('\n').filter((line) => line.includes('snippet.ts'))).toEqual([]);
    expect(compiled).toBe('');

    await server.baton.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = server.baton.app.server.address() as { port: number };
    const mailbox = await server.api('POST', '/mailboxes', { body: { name: 'summaries' }, idem: randomUUID() });
    const scopeId = randomUUID();
    const task = await server.api('POST', '/tasks', { body: { scopeId, mailboxId: mailbox.body.id, taskKey: 'summarize-report' }, idem: randomUUID() });
    expect(task.statusCode).toBe(201);
    const env = { ...process.env, BATON_URL: `http://127.0.0.1:${port}`, BATON_API_KEY: server.key, BATON_SPACE: server.spaceId, BATON_SCOPE: scopeId, BATON_MAILBOX: mailbox.body.id };
    const runSnippet = async (): Promise<string> => (await run(process.execPath, [tsx, join(dir, 'snippet.ts')], { env })).stdout.trim();
    expect(await runSnippet()).toMatch(new RegExp(`^admitted task ${task.body.taskId}; lease token \\S+$`));
    expect(await runSnippet()).toBe('nothing was admissible within waitMs (204)');
  }, 120_000);
});
