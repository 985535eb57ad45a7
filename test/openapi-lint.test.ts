import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { MemoryStore } from '@baton/core';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { operations } from '@baton-coordination/server/http/contract/operations';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server';

/**
 * The served OpenAPI document as a published contract: Redocly's recommended rules pass, and every
 * operation has what a generated client names its methods after (server/src/http/contract/).
 */

type Json = Record<string, any>;
const run = promisify(execFile);
const redocly = join(process.cwd(), 'node_modules/@redocly/cli/bin/cli.js');
/** Warnings kept on purpose, each with its reason. */
const acceptedWarnings: Record<string, string> = {
  'info-license': 'the repository has no license yet; the document does not invent one',
};

describe('the OpenAPI document as a contract', () => {
  let server: TestServer;
  let doc: Json;
  let dir: string;
  const each = (): Array<{ where: string; op: Json }> =>
    Object.entries<Json>(doc.paths).flatMap(([path, item]) => Object.entries<Json>(item).map(([method, op]) => ({ where: `${method.toUpperCase()} ${path}`, op })));

  beforeAll(async () => {
    server = await startTestServer(new MemoryStore());
    doc = (await server.inject('GET', '/v1/openapi.json', {})).body;
    dir = await mkdtemp(join(tmpdir(), 'baton-openapi-'));
  });
  afterAll(async () => {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("passes Redocly's recommended rules with no error and no warning but those accepted", async () => {
    const file = join(dir, 'openapi.json');
    await writeFile(file, JSON.stringify(doc));
    // Exit code 1 when there are errors: the report is read either way.
    const { stdout } = await run(process.execPath, [redocly, 'lint', file, '--format=json', '--extends=recommended'], {
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      maxBuffer: 64 * 1024 * 1024,
    }).catch((error: { stdout: string }) => ({ stdout: error.stdout }));
    const report = JSON.parse(stdout) as { totals: { errors: number }; problems: Array<{ ruleId: string; severity: string; message: string; location: Array<{ pointer: string }> }> };
    const problems = report.problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
    expect(problems.filter((p) => p.startsWith('error'))).toEqual([]);
    expect(report.totals.errors).toBe(0);
    expect(report.problems.filter((p) => !(p.ruleId in acceptedWarnings)).map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
  }, 60_000);

  it('gives every operation a unique camelCase operationId and a summary (add new routes to server/src/http/contract/operations.ts)', () => {
    const missing = each().filter(({ op }) => typeof op.operationId !== 'string' || typeof op.summary !== 'string' || op.summary.length === 0).map(({ where }) => where);
    expect(missing, 'operations without an entry in server/src/http/contract/operations.ts').toEqual([]);
    const ids = each().map(({ op }) => op.operationId as string);
    expect(ids.filter((id) => !/^[a-z][a-zA-Z0-9]*$/.test(id))).toEqual([]);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    expect(ids.length).toBeGreaterThan(90);
  });

  it('has no entry in the contract table for an operation the server does not have', () => {
    const present = new Set(each().map(({ op }) => op.operationId as string));
    expect(Object.entries(operations).filter(([, c]) => !present.has(c.operationId)).map(([key]) => key)).toEqual([]);
  });

  it('describes every reply (no "Default Response") and shows VALIDATION_FAILED as the example of every 400', () => {
    for (const { where, op } of each()) {
      for (const [status, reply] of Object.entries<Json>(op.responses)) {
        expect(reply.description, `${where} ${status}`).not.toMatch(/^Default Response$/);
        expect(reply.description.length, `${where} ${status}`).toBeGreaterThan(5);
      }
      const examples = op.responses['400'].content['application/json'].examples;
      expect(Object.keys(examples)[0], where).toBe('VALIDATION_FAILED');
      expect(examples.VALIDATION_FAILED.value.error.details.length, where).toBeGreaterThan(0);
    }
  });

  it('declares 429 and 503 with Retry-After on every user operation, and 204 without a body on admit and recv', () => {
    for (const { where, op } of each().filter(({ where }) => where.includes('/v1/spaces/'))) {
      for (const status of ['429', '503']) expect(op.responses[status]?.headers?.['Retry-After'], `${where} ${status}`).toEqual({ $ref: '#/components/headers/Retry-After' });
    }
    for (const id of ['admitDelivery', 'admitDeliveries', 'receiveMessage', 'receiveMessages']) {
      const op = each().find(({ op }) => op.operationId === id)!.op;
      expect(op.responses['204'], id).toBeDefined();
      expect(op.responses['204'].content, id).toBeUndefined();
    }
  });

  it('shows a written example, valid against its schema, for every patterned string (no value generated from a regular expression)', () => {
    const ajv = new Ajv2020({ strict: false });
    addFormats(ajv);
    const problems: string[] = [];
    let checked = 0;
    const walk = (node: unknown, where: string): void => {
      if (node === null || typeof node !== 'object') return;
      const schema = node as Json;
      if (schema.type === 'string' && (schema.pattern || schema.format)) {
        if (!Array.isArray(schema.examples)) problems.push(`${where}: no example`);
        else if (!ajv.validate(schema, schema.examples[0])) problems.push(`${where}: example ${JSON.stringify(schema.examples[0])} ${ajv.errorsText()}`);
        checked++;
      }
      for (const [key, child] of Object.entries(schema)) if (key !== 'examples' && key !== 'example') walk(child, `${where}/${key}`);
    };
    walk(doc.paths, '#/paths');
    walk(doc.components.schemas, '#/components/schemas');
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(300);
  });

  it('reads as Baton\'s: title, description, tags in reading order with the operator\'s last', () => {
    expect(doc.info.title).toBe('Baton API');
    expect(doc.info.description).toMatch(/Idempotency-Key/);
    const names = doc.tags.map((t: Json) => t.name);
    expect(names[0]).toBe('tasks');
    expect(names.at(-1)).toBe('admin');
    const used = new Set(each().flatMap(({ op }) => op.tags));
    expect([...used].filter((t) => !names.includes(t))).toEqual([]);
    expect(doc['x-tagGroups'].at(-1)).toEqual({ name: 'Operator', tags: ['admin'] });
  });
});
