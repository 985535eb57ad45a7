import fc from 'fast-check';

/**
 * fast-check arbitraries that turn the served OpenAPI document into hostile HTTP requests
 * (test/http/fuzz-routes.test.ts). Arbitraries produce small printable recipes; `materialize`
 * expands them into the bytes sent, so a failing case prints as "a 1,000,000-byte string here"
 * rather than as the megabyte itself.
 */

/** The subset of JSON Schema 2020-12 the document's request parts use (see the openapi test). */
export interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  enum?: unknown[];
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  additionalProperties?: boolean | Schema;
}

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema: Schema;
}

/** One path+method of the document. */
export interface Operation {
  method: string;
  path: string;
  parameters: Parameter[];
  body: Schema | undefined;
}

/** Every operation of an OpenAPI document, in document order. */
export function operationsOf(doc: { paths: Record<string, Record<string, { parameters?: Parameter[]; requestBody?: { content?: Record<string, { schema: Schema }> } }>> }): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      out.push({ method: method.toUpperCase(), path, parameters: op.parameters ?? [], body: op.requestBody?.content?.['application/json']?.schema });
    }
  }
  return out;
}

export const operationName = (op: Operation): string => `${op.method} ${op.path}`;

/** Real values the fuzzer may reuse, by field or path-segment name (ids of created resources, tokens, names). */
export type Pools = Record<string, string[]>;

/** A long run of one character, printed by its size; expanded only when the request is built. */
export class Big {
  constructor(
    readonly unit: string,
    readonly count: number,
  ) {}
  toString(): string {
    return this.unit.repeat(this.count);
  }
  [fc.toStringMethod](): string {
    return `Big(${JSON.stringify(this.unit)} x ${this.count})`;
  }
}

/** Strings that trip up decoders, normalizers and length checks. */
const unicodeEdges = [
  '\uD800', // lone high surrogate
  '\uDFFF\uD800', // reversed pair
  '\u0000',
  'a\u0000b',
  '\uFEFF',
  '\uFEFFname',
  '\u202Eevil\u202C', // right-to-left override
  '\u200F\u200E',
  '😀',
  '👩‍👩‍👧‍👦',
  '𝄞',
  'e\u0301', // combining accent
  'İı',
  '\u2028\u2029',
  '\r\n',
  '%00',
  '${jndi:x}',
  "'; DROP TABLE tasks; --",
  '<script>',
  '../../etc/passwd',
];

/** Numbers at the edges of JSON and of IEEE doubles, as they appear in JSON text. */
const rawNumbers = ['-0', '1e400', '-1e400', '1e-400', '9007199254740993', '18446744073709551616', '123456789012345678901234567890', '0.1', '1.0', '1e2', '-1', '0', '00', '01', '+1', '.5', 'NaN', 'Infinity'];

const protoKeys = ['__proto__', 'constructor', 'prototype'];

/**
 * Any code point, lone surrogates included. (fast-check's `unit: 'binary'` does the same but
 * builds a million-entry reverse map on first use: most of a route's time.)
 */
const anyChar = fc.oneof(fc.integer({ min: 0, max: 0x10ffff }).map((cp) => String.fromCodePoint(cp)), fc.constantFrom('\uD800', '\uDC00', '\u0000', '\uFEFF', '"', '\\'));
const anyString = (maxLength: number): fc.Arbitrary<string> => fc.array(anyChar, { maxLength }).map((chars) => chars.join(''));

/** A JSON value of a type the schema may not expect. */
export const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(null, true, false, 0, -1, 1.5, -0, Number.MAX_SAFE_INTEGER + 2, 2 ** 64, 1e308, -1e308, 5e-324, '', ' ', '0', 'null', 'true', [], {}, [null], { a: null }),
  fc.constantFrom(...unicodeEdges),
  // Long strings, up to 100,000 characters (a whole 1 MB body is the 'huge' body recipe's job).
  fc.integer({ min: 1, max: 5 }).map((k) => new Big('x', 10 ** k)),
  fc.constantFrom(new Big('😀', 1000), new Big('\uD800', 1000), new Big('\u0000', 1000)),
  anyString(20),
  fc.jsonValue({ maxDepth: 2 }),
);

/** A string for a field: a real value of that name when there is one, else generated. */
function stringFor(schema: Schema, pools: Pools, name: string | undefined): fc.Arbitrary<unknown> {
  const real = name ? pools[name] ?? [] : [];
  const generated = generatedString(schema, pools);
  return real.length > 0 ? fc.oneof({ arbitrary: fc.constantFrom(...real), weight: 3 }, { arbitrary: generated, weight: 1 }) : generated;
}

function generatedString(schema: Schema, pools: Pools): fc.Arbitrary<string> {
  if (schema.format === 'uuid') return fc.oneof(fc.constantFrom(...(pools.uuid ?? ['00000000-0000-4000-8000-000000000000'])), fc.uuid());
  if (schema.format === 'date-time') {
    return fc.date({ min: new Date(Date.UTC(2025, 0, 1)), max: new Date(Date.UTC(2027, 0, 1)), noInvalidDate: true }).map((d) => d.toISOString());
  }
  const min = schema.minLength ?? 0;
  const max = Math.min(schema.maxLength ?? 40, 40);
  if (schema.pattern && schema.pattern !== '^[^\\u0000]*$') {
    return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length >= min && s.length <= (schema.maxLength ?? Infinity));
  }
  return fc.string({ minLength: Math.max(min, 0), maxLength: Math.max(max, min) }).map((s) => s.replaceAll('\u0000', '_'));
}

/**
 * A value that satisfies `schema` (as far as a generator can tell: semantic rules such as
 * "units within capacity" are the server's business). Fields named in `pools` often get real values.
 */
export function validValue(schema: Schema, pools: Pools, name?: string): fc.Arbitrary<unknown> {
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s) => validValue(s, pools, name)));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object': {
      const props = schema.properties ?? {};
      const record = Object.fromEntries(Object.entries(props).map(([key, sub]) => [key, validValue(sub, pools, key)]));
      return fc.record(record, { requiredKeys: (schema.required ?? []).filter((k) => k in props) });
    }
    case 'array':
      return fc.array(validValue(schema.items ?? {}, pools, name), { minLength: schema.minItems ?? 0, maxLength: Math.max(Math.min(schema.maxItems ?? 4, 4), schema.minItems ?? 0) });
    case 'string':
      return stringFor(schema, pools, name);
    case 'integer':
      return fc.integer({ min: Math.max(schema.minimum ?? -1_000_000, Number.MIN_SAFE_INTEGER), max: Math.min(schema.maximum ?? 1_000_000, Number.MAX_SAFE_INTEGER) });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      // No type: any JSON (payloads, task input, results).
      return fc.jsonValue({ maxDepth: 3 });
  }
}

/** One change to a valid object: the ways a client gets a body wrong. */
export type Mutation =
  | { op: 'set'; path: string[]; value: unknown }
  | { op: 'delete'; path: string[] }
  | { op: 'replace-root'; value: unknown };

/** The field paths of a schema, two levels deep, for mutations to aim at. */
function fieldPaths(schema: Schema, prefix: string[] = [], depth = 0): string[][] {
  const out: string[][] = [];
  for (const [key, sub] of Object.entries(schema.properties ?? {})) {
    out.push([...prefix, key]);
    if (depth < 1 && sub.properties) out.push(...fieldPaths(sub, [...prefix, key], depth + 1));
  }
  return out;
}

function mutationOf(schema: Schema): fc.Arbitrary<Mutation> {
  const paths = fieldPaths(schema);
  const anyPath: fc.Arbitrary<string[]> = paths.length > 0 ? fc.constantFrom(...paths) : fc.constant<string[]>(['field']);
  const extraKey = fc.oneof(fc.constantFrom('extra', 'id', 'spaceId', 'orgId', ...unicodeEdges), fc.string({ maxLength: 10 }));
  return fc.oneof(
    { arbitrary: fc.record({ op: fc.constant('set' as const), path: anyPath, value: nastyValue }), weight: 6 },
    { arbitrary: fc.record({ op: fc.constant('delete' as const), path: anyPath }), weight: 2 },
    { arbitrary: fc.record({ op: fc.constant('set' as const), path: extraKey.map((k) => [k]), value: nastyValue }), weight: 1 },
    { arbitrary: fc.record({ op: fc.constant('replace-root' as const), value: nastyValue }), weight: 1 },
  );
}

/** Applies a mutation to a copy of `value` (objects along the path are created as needed). */
export function applyMutation(value: unknown, mutation: Mutation): unknown {
  if (mutation.op === 'replace-root') return mutation.value;
  const root: Record<string, unknown> = isObject(value) ? structuredClone(value) : {};
  let at = root;
  for (const key of mutation.path.slice(0, -1)) {
    const next = at[key];
    at = isObject(next) ? next : (at[key] = {});
  }
  const last = mutation.path[mutation.path.length - 1] ?? 'field';
  if (mutation.op === 'delete') delete at[last];
  else at[last] = mutation.value;
  return root;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Big);

/** What is sent as the body. */
export type BodyRecipe =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown; mutations: Mutation[]; tail: string | null }
  | { kind: 'raw'; text: string }
  | { kind: 'deep'; depth: number; open: '[' | '{"a":'; at: string | null; base: unknown }
  | { kind: 'huge'; bytes: number; at: string | null; base: unknown }
  | { kind: 'bytes'; hex: string };

/**
 * Raw `"key": value` text appended at the end of a JSON object: duplicate keys (the last wins in
 * JSON.parse), numbers no double holds, escapes of lone surrogates, prototype-poisoning keys.
 */
function rawTail(schema: Schema | undefined): fc.Arbitrary<string> {
  const keys = Object.keys(schema?.properties ?? {});
  const key = keys.length > 0 ? fc.oneof(fc.constantFrom(...keys), fc.constantFrom(...protoKeys)) : fc.constantFrom(...protoKeys);
  const rawValue = fc.oneof(
    fc.constantFrom(...rawNumbers),
    fc.constantFrom('"\\ud800"', '"\\udfff"', '"a\\u0000b"', '"\\ufeff"', '"\\u202e"', '{"__proto__":{"polluted":true}}', '{"constructor":{"prototype":{"polluted":true}}}', '[]', '{}', 'null', '"x"'),
  );
  return fc.tuple(key, rawValue).map(([k, v]) => `${JSON.stringify(k)}:${v}`);
}

/** Whole bodies that are not JSON, or JSON that no schema here wants. */
const rawTexts = [
  '', ' ', '{', '}', '[', '{"a":}', '{"a":1,}', "{'a':1}", '{"a":1}{"b":2}', '{"a":1} trailing', 'null', 'true', '0', '-0', '1e400', '"string"', '[]', '{}', '[{}]',
  '\uFEFF{}', '{"a":"\\ud800"}', '{"a":"\\x41"}', '{"a":01}', '{"a":NaN}', '{"a":Infinity}', '/* c */{}', '{"a":1 // c\n}', '\u0000', '{"\u0000":1}',
  '{"__proto__":{"isAdmin":true}}', '{"constructor":{"prototype":{"isAdmin":true}}}', '{"a":1,"a":2}', 'a=1&b=2', '<xml/>',
];

export function bodyArbitrary(schema: Schema | undefined, pools: Pools): fc.Arbitrary<BodyRecipe> {
  const base = schema ? validValue(schema, pools) : fc.constant({});
  const json = (mutations: fc.Arbitrary<Mutation[]>, tail: fc.Arbitrary<string | null>) =>
    fc.record({ kind: fc.constant('json' as const), value: base, mutations, tail });
  const anyField = fc.constantFrom<string | null>(null, ...Object.keys(schema?.properties ?? {}));
  // Weights per 1,000: the megabyte bodies are costly, so few; valid bodies reach the deepest code.
  return fc.oneof(
    { arbitrary: json(fc.constant([]), fc.constant(null)), weight: 300 },
    { arbitrary: json(fc.array(schema ? mutationOf(schema) : fc.constant<Mutation>({ op: 'replace-root', value: null }), { minLength: 1, maxLength: 3 }), fc.constant(null)), weight: 360 },
    { arbitrary: json(fc.constant([]), rawTail(schema)), weight: 120 },
    { arbitrary: fc.record({ kind: fc.constant('raw' as const), text: fc.oneof(fc.constantFrom(...rawTexts), anyString(30)) }), weight: 110 },
    { arbitrary: fc.constant<BodyRecipe>({ kind: 'none' }), weight: 50 },
    { arbitrary: fc.record({ kind: fc.constant('deep' as const), depth: fc.constantFrom(100, 10_000, 100_000), open: fc.constantFrom('[' as const, '{"a":' as const), at: anyField, base }), weight: 25 },
    { arbitrary: fc.record({ kind: fc.constant('bytes' as const), hex: fc.constantFrom('ff', 'c0af', '7bff7d', 'efbbbf7b7d', '7b2261223a22eda080227d', 'fffe7b007d00') }), weight: 30 },
    // Around Fastify's 1 MiB body limit: just under (parsed and validated) and just over (413).
    { arbitrary: fc.record({ kind: fc.constant('huge' as const), bytes: fc.constantFrom(1_000_000, 1_100_000), at: anyField, base }), weight: 5 },
  );
}

/** The body's text (or bytes); undefined when none is sent. */
export function materializeBody(body: BodyRecipe): string | Buffer | undefined {
  switch (body.kind) {
    case 'none':
      return undefined;
    case 'raw':
      return body.text;
    case 'bytes':
      return Buffer.from(body.hex, 'hex');
    case 'json': {
      const value = body.mutations.reduce(applyMutation, body.value);
      const text = stringify(value);
      if (body.tail === null) return text;
      // Appended so that a duplicate key overrides the valid one (JSON.parse keeps the last).
      return isObject(value) ? `${text.slice(0, -1)}${Object.keys(value).length > 0 ? ',' : ''}${body.tail}}` : `{${body.tail}}`;
    }
    case 'deep': {
      const close = body.open === '[' ? ']' : '}';
      return embed(body.base, body.at, `${body.open.repeat(body.depth)}${close.repeat(body.depth)}`);
    }
    case 'huge':
      return embed(body.base, body.at, JSON.stringify('x'.repeat(body.bytes)));
  }
}

/** `base` as JSON with the raw text `inner` as field `at` (or as the whole body). */
function embed(base: unknown, at: string | null, inner: string): string {
  if (at === null || !isObject(base)) return inner;
  const rest = { ...base };
  delete rest[at];
  const text = stringify(rest);
  return `${text.slice(0, -1)}${Object.keys(rest).length > 0 ? ',' : ''}${JSON.stringify(at)}:${inner}}`;
}

/** JSON.stringify that expands Big runs. */
export const stringify = (value: unknown): string => JSON.stringify(value, (_k, v: unknown) => (v instanceof Big ? v.toString() : v)) ?? 'null';

/** A path parameter: a real id, a random UUID, or something hostile (sent as is or percent-encoded). */
export type ParamRecipe = { kind: 'real'; index: number } | { kind: 'uuid'; value: string } | { kind: 'text'; value: string; encode: boolean };

const hostileSegments = [
  '', '.', '..', '%2e%2e', '..%2F..', '%2F', '%00', '%ZZ', '%', '%E0%A4%A', '%C0%AF', '%EF%BB%BF', '-1', '0', '1e400', 'null', 'undefined', '__proto__', 'constructor', 'prototype',
  '00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '00000000-0000-4000-8000-00000000000g', '{id}', ':id', '*',
];

export const paramArbitrary: fc.Arbitrary<ParamRecipe> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('real' as const), index: fc.nat() }), weight: 12 },
  { arbitrary: fc.record({ kind: fc.constant('uuid' as const), value: fc.uuid() }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('text' as const), value: fc.constantFrom(...hostileSegments), encode: fc.constant(false) }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('text' as const), value: fc.oneof(fc.constantFrom(...unicodeEdges), fc.string({ maxLength: 20 }), fc.constant('a'.repeat(300))), encode: fc.constant(true) }), weight: 2 },
);

/** The URL segment for a parameter; `real` picks among the given ids (the upper-cased form too: UUIDs are case-insensitive). */
export function materializeParam(param: ParamRecipe, real: string[]): string {
  switch (param.kind) {
    case 'real': {
      if (real.length === 0) return encodeURIComponent('00000000-0000-4000-8000-000000000000');
      const id = real[param.index % real.length] ?? '';
      return param.index % 7 === 6 ? id.toUpperCase() : encodeURIComponent(id);
    }
    case 'uuid':
      return param.value;
    case 'text':
      return param.encode ? encodeURIComponent(param.value.replace(/[\uD800-\uDFFF]/g, '\uFFFD')) : param.value;
  }
}

/** Query pairs: declared parameters with valid or wrong values, duplicates, arrays, unknown names, huge values. */
export function queryArbitrary(params: Parameter[], pools: Pools): fc.Arbitrary<Array<[string, unknown]>> {
  const declared = params.filter((p) => p.in === 'query');
  const names = declared.map((p) => p.name);
  const anyName = names.length > 0 ? fc.oneof(fc.constantFrom(...names), fc.constantFrom('unknown', 'limit[]', 'cursor[0]', '__proto__', '')) : fc.constantFrom('unknown', '__proto__', 'limit', '');
  const oneDeclared = declared.map((p) =>
    fc.option(
      fc.oneof(
        { arbitrary: validValue(p.schema, pools, p.name).map((v) => [p.name, v] as [string, unknown]), weight: 3 },
        { arbitrary: nastyValue.map((v) => [p.name, v] as [string, unknown]), weight: 1 },
      ),
      { freq: 2 },
    ),
  );
  const extras = fc.array(fc.tuple(anyName, fc.oneof(nastyValue, fc.constantFrom<unknown>('1', '2', 'a,b', '%', '%ZZ', new Big('9', 10_000)))), { maxLength: 3 });
  return fc.tuple(fc.tuple(...oneDeclared), extras).map(([chosen, more]) => [...chosen.filter((pair): pair is [string, unknown] => pair !== null), ...more]);
}

/** The query string; values are percent-encoded unless they are raw percent junk meant to reach the parser. */
export function materializeQuery(pairs: Array<[string, unknown]>): string {
  if (pairs.length === 0) return '';
  const parts = pairs.map(([name, value]) => {
    const text = value instanceof Big ? value.toString() : typeof value === 'string' ? value : stringify(value);
    const raw = text === '%' || text === '%ZZ';
    return `${encodeURIComponent(name)}=${raw ? text : encodeURIComponent(text.replace(/[\uD800-\uDFFF]/g, '\uFFFD'))}`;
  });
  return `?${parts.join('&')}`;
}

/** Who the request claims to be. */
export type AuthRecipe = 'valid' | 'read-only' | 'none' | 'admin-token' | 'wrong-scheme' | 'bare-bearer' | 'lowercase-bearer' | 'junk-key' | 'valid-with-suffix' | 'huge' | 'unicode' | 'other-tenant';

export const authArbitrary: fc.Arbitrary<AuthRecipe> = fc.oneof(
  { arbitrary: fc.constant<AuthRecipe>('valid'), weight: 40 },
  { arbitrary: fc.constantFrom<AuthRecipe>('read-only', 'none', 'admin-token', 'wrong-scheme', 'bare-bearer', 'lowercase-bearer', 'junk-key', 'valid-with-suffix', 'huge', 'unicode', 'other-tenant'), weight: 5 },
);

/** The Idempotency-Key header: a fresh key mostly; else missing, empty, at and past 255, unicode, or one reused across bodies. */
export type IdemRecipe = 'fresh' | 'missing' | 'empty' | 'space' | 'max' | 'too-long' | 'huge' | 'unicode' | 'reused';

export const idemArbitrary: fc.Arbitrary<IdemRecipe> = fc.oneof(
  { arbitrary: fc.constant<IdemRecipe>('fresh'), weight: 16 },
  { arbitrary: fc.constantFrom<IdemRecipe>('missing', 'empty', 'space', 'max', 'too-long', 'huge', 'unicode', 'reused'), weight: 4 },
);

export const contentTypeArbitrary: fc.Arbitrary<string | null> = fc.oneof(
  { arbitrary: fc.constant('application/json'), weight: 16 },
  {
    arbitrary: fc.constantFrom<string | null>(
      null, '', 'text/plain', 'application/json; charset=utf-8', 'application/json; charset=latin1', 'application/json; charset=utf-16', 'APPLICATION/JSON',
      'application/jsonx', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json, text/plain', 'application/*', '*/*', 'application/problem+json',
    ),
    weight: 4,
  },
);

export const requestIdArbitrary: fc.Arbitrary<string | null> = fc.oneof(
  { arbitrary: fc.constant(null), weight: 8 },
  { arbitrary: fc.constantFrom('fuzz-req-1', '', ' ', 'has space', '../../x', 'ü', 'a'.repeat(129), 'a'.repeat(128), '<script>', 'null'), weight: 2 },
);

/** Everything about one generated request. */
export interface RequestRecipe {
  spaceId: ParamRecipe;
  params: Record<string, ParamRecipe>;
  query: Array<[string, unknown]>;
  body: BodyRecipe;
  auth: AuthRecipe;
  idem: IdemRecipe;
  contentType: string | null;
  requestId: string | null;
}

export function requestArbitrary(op: Operation, pools: Pools): fc.Arbitrary<RequestRecipe> {
  const pathNames = op.parameters.filter((p) => p.in === 'path' && p.name !== 'spaceId').map((p) => p.name);
  return fc.record({
    spaceId: fc.oneof({ arbitrary: fc.constant<ParamRecipe>({ kind: 'real', index: 0 }), weight: 12 }, { arbitrary: paramArbitrary, weight: 1 }),
    params: fc.record(Object.fromEntries(pathNames.map((name) => [name, paramArbitrary]))),
    query: queryArbitrary(op.parameters, pools),
    body: bodyArbitrary(op.body, pools),
    auth: authArbitrary,
    idem: idemArbitrary,
    contentType: contentTypeArbitrary,
    requestId: requestIdArbitrary,
  });
}
