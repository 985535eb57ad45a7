import { MemoryStore } from '@baton/core';
import { Validator } from '@seriousme/openapi-schema-validator';
import Ajv2020 from 'ajv/dist/2020';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server';

/**
 * The served OpenAPI document and its rendered reference at /docs. The document depends on the
 * routes, not on the store, so one memory-backed server is enough.
 */

type Json = Record<string, any>;

/** Every Schema Object of the document, named by where it sits. */
function schemaObjects(doc: Json): Array<[string, Json]> {
  const found: Array<[string, Json]> = Object.entries<Json>(doc.components?.schemas ?? {}).map(([name, schema]) => [`components.schemas.${name}`, schema]);
  for (const [path, item] of Object.entries<Json>(doc.paths)) {
    for (const [method, op] of Object.entries<Json>(item)) {
      const where = `${method.toUpperCase()} ${path}`;
      for (const param of op.parameters ?? []) found.push([`${where} ${param.in} ${param.name}`, param.schema]);
      for (const [type, media] of Object.entries<Json>(op.requestBody?.content ?? {})) found.push([`${where} body ${type}`, media.schema]);
      for (const [status, response] of Object.entries<Json>(op.responses ?? {})) {
        for (const [type, media] of Object.entries<Json>(response.content ?? {})) found.push([`${where} ${status} ${type}`, media.schema]);
      }
    }
  }
  return found;
}

/**
 * The OpenAPI 3.1 schema leaves Schema Objects to their dialect, so the validator accepts any
 * object there (`{type: 'foo'}`, 3.0's `nullable`). This checks them as JSON Schema 2020-12, the
 * 3.1 default dialect: against the meta-schema, for 3.0's `nullable`, and compiled in strict
 * mode, which refuses any other keyword that is neither 2020-12's nor the OpenAPI vocabulary's.
 * Returns the problems found, one at most per schema.
 */
function schemaProblems(doc: Json): string[] {
  // Component references become references into one registered schema, so they resolve.
  const text = JSON.stringify(doc).replaceAll('"#/components/schemas/', '"components#/$defs/');
  const rewritten = JSON.parse(text) as Json;
  const ajv = new Ajv2020({ strict: true, validateFormats: false });
  ajv.addVocabulary(['discriminator', 'xml', 'externalDocs', 'example']);
  // Registered unchecked: each component is checked below under its own name.
  ajv.addSchema({ $id: 'components', $defs: rewritten.components?.schemas ?? {} }, undefined, undefined, false);
  const problems: string[] = [];
  for (const [where, schema] of schemaObjects(rewritten)) {
    const problem = schemaProblem(ajv, schema);
    if (problem) problems.push(`${where}: ${problem}`);
  }
  return problems;
}

function schemaProblem(ajv: Ajv2020, schema: Json): string | undefined {
  if (!ajv.validateSchema(schema)) return ajv.errorsText();
  // Ajv accepts 3.0's `nullable` as an extension even in strict mode; 3.1 has no such keyword.
  if (hasNullableKeyword(schema)) return 'OpenAPI 3.0 keyword nullable';
  try {
    ajv.compile(schema);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** A boolean `nullable` anywhere: the keyword, not a property named so (its value is a schema). */
function hasNullableKeyword(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  return Object.entries(value).some(([key, child]) => (key === 'nullable' && typeof child === 'boolean') || hasNullableKeyword(child));
}

describe('the OpenAPI document and /docs', () => {
  let server: TestServer;
  let doc: Json;

  beforeAll(async () => {
    server = await startTestServer(new MemoryStore());
    doc = (await server.inject('GET', '/v1/openapi.json', {})).body;
  });
  afterAll(async () => server.close());

  it('is OpenAPI 3.1 and valid against the OpenAPI 3.1 schema', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('declares Retry-After on every 429 reply', () => {
    const tooMany = Object.values(doc.paths as Record<string, Record<string, Json>>).flatMap((ops) => Object.values(ops).map((op) => op.responses?.['429']).filter(Boolean));
    expect(tooMany.length).toBeGreaterThan(3);
    for (const reply of tooMany) expect(reply.headers['Retry-After']).toEqual({ $ref: '#/components/headers/Retry-After' });
    expect(doc.components.headers['Retry-After'].schema).toEqual({ type: 'integer', minimum: 1 });
  });

  it('has Schema Objects that are valid JSON Schema 2020-12 with no foreign keywords', () => {
    expect(schemaObjects(doc).length).toBeGreaterThan(100);
    expect(schemaProblems(doc)).toEqual([]);
    // Nullable values are written as 2020-12 does (a null type), never with 3.0's `nullable`.
    expect(JSON.stringify(doc)).toContain('"type":"null"');
  });

  it('the schema check is not vacuous: it refuses what the 3.1 validator lets through', async () => {
    const planted = { Old: { type: 'string', nullable: true }, Typo: { type: 'strng' }, Unknown: { type: 'string', minLenght: 1 } };
    const bad = { ...doc, components: { ...doc.components, schemas: { ...doc.components.schemas, ...planted } } };
    expect((await new Validator().validate(bad)).valid).toBe(true);
    const problems = schemaProblems(bad);
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/^components\.schemas\.Old: .*nullable/);
    expect(problems[1]).toMatch(/^components\.schemas\.Typo: .*type/);
    expect(problems[2]).toMatch(/^components\.schemas\.Unknown: .*minLenght/);
  });

  it('declares every path template variable as a required path parameter', () => {
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      const variables = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      for (const op of Object.values<Json>(item)) {
        const params = (op.parameters ?? []).filter((p: Json) => p.in === 'path');
        expect(params.map((p: Json) => p.name).sort(), path).toEqual(variables);
        expect(params.every((p: Json) => p.required === true), path).toBe(true);
      }
    }
  });

  it('describes each batch item in its single route\'s shape, though a batch takes any objects and judges each alone', () => {
    const bodyOf = (path: string): Json => doc.paths[`/v1/spaces/{spaceId}${path}`].post.requestBody.content['application/json'].schema;
    const single = bodyOf('/tasks');
    const submitItems = bodyOf('/tasks/submit-batch').properties.tasks;
    expect(submitItems).toMatchObject({ type: 'array', minItems: 1, maxItems: 100 });
    expect(submitItems.items).toEqual(single);
    expect(bodyOf('/mailboxes/{id}/messages/send-batch').properties.messages.items).toEqual(bodyOf('/mailboxes/{id}/messages'));
    for (const [batch, field] of [['complete', 'token'], ['nack', 'retry'], ['renew', 'leaseSeconds']]) {
      expect(Object.keys(bodyOf(`/messages/${batch}-batch`).properties.items.items.properties), batch).toEqual(expect.arrayContaining(['messageId', field]));
    }
  });

  it('answers GET /docs with the HTML reference, without a key', async () => {
    const res = await server.baton.app.inject({ method: 'GET', url: '/docs' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('swagger-ui');
    // Baton's reference, not Fastify's: its title and favicon.
    expect(res.body).toContain('<title>Baton API reference</title>');
    expect(res.body).toContain('favicon.svg');
    // The page is empty without its scripts: they are served too, without a key.
    for (const script of ['/docs/static/swagger-ui-bundle.js', '/docs/static/swagger-initializer.js']) {
      const asset = await server.baton.app.inject({ method: 'GET', url: script });
      expect(asset.statusCode, script).toBe(200);
      expect(asset.headers['content-type'], script).toMatch(/javascript/);
    }
  });

  it('serves the same document on the reference\'s JSON route', async () => {
    const res = await server.inject('GET', '/docs/json', {});
    expect(res.statusCode).toBe(200);
    expect(res.body).toEqual(doc);
  });

  it('keeps the reference\'s own routes and the document\'s route out of the document', () => {
    const paths = Object.keys(doc.paths);
    expect(paths.filter((p) => p.startsWith('/docs') || p === '/v1/openapi.json')).toEqual([]);
    expect(paths).toEqual(expect.arrayContaining(['/v1/spaces/{spaceId}/tasks', '/v1/spaces/{spaceId}/tasks/admit']));
  });
});
