import type { ErrorCode } from '@baton/core';
import { policyOf } from '../../limits/route-policy';
import { errorTable } from '../error-status';
import { addFieldExamples } from './field-examples';
import { operations, type OperationContract } from './operations';
import { errorReply, errorStatuses, replyHeaders, type Json } from './responses';

/**
 * Turns the document @fastify/swagger made from the routes' zod schemas into Baton's contract:
 * each operation gets its entry of operations.ts (id, summary, Idempotency-Key, examples) and
 * every status its kind of route can answer, each error status built by responses.ts. Rules, not
 * per-route edits, so a route added tomorrow is described like the others.
 */

export const spacePrefix = '/v1/spaces/{spaceId}';
const adminPrefix = '/admin/v1';

/** The document's head: what a reader sees first at /docs. */
export const info = {
  title: 'Baton API',
  version: '1.0.0',
  summary: 'Coordination for teams of AI agents and other concurrent workers.',
  description: [
    'Baton coordinates workers that share scarce things: durable tasks admitted together with the resources they need, work queues with leases, task groups, barriers, claims, timers, spend budgets, shared quotas, and an event journal with webhooks.',
    '',
    '**Calls.** Every call of the user API is under `/v1/spaces/{spaceId}` and sends `Authorization: Bearer <API key>`. The operator API (`/admin/v1`, last) takes the operator token instead.',
    '',
    '**Retries.** Writes take an `Idempotency-Key` (required where the parameter says so): a repeat within 24 hours answers the first reply with `Idempotent-Replayed: true`. A 429 or 503 says when to retry in `Retry-After`; retry with the same key.',
    '',
    '**Errors** are `{"error": {"code", "message", "requestId", "details"?}}`; each operation lists the statuses it can answer and the codes behind each.',
    '',
    'Prose reference: docs/api.md in the repository.',
  ].join('\n'),
};

/** Tag order is reading order: the user's work first, the operator's last. */
const tagGroups: Array<{ name: string; tags: Array<{ name: string; description: string }> }> = [
  {
    name: 'Work',
    tags: [
      { name: 'tasks', description: 'Durable tasks: submit (create or join by taskKey), admit with their resources, await their outcome. The `-batch` routes do up to 100 at once.' },
      { name: 'mailboxes', description: 'Work queues and inboxes: send, receive under a lease, renew, complete, nack.' },
      { name: 'task groups', description: 'Collective completion: a group decides when N results are accepted, the first is, or all members end.' },
    ],
  },
  {
    name: 'Coordination',
    tags: [
      { name: 'claims', description: 'Exclusive claims on a key, with a lease and a fencing token.' },
      { name: 'barriers', description: 'Wait-for-all rendezvous points, reusable through epochs.' },
      { name: 'timers', description: 'Durable timers that send a message when they fire.' },
      { name: 'runs', description: 'Runs name a scopeId explicitly: children, counts, complete and cancel as a whole.' },
    ],
  },
  {
    name: 'Shared resources',
    tags: [
      { name: 'budgets', description: 'Exact-decimal spend budgets: reserve, settle, void.' },
      { name: 'pools', description: 'Counted capacity (GPUs, seats) that admission holds for a task.' },
      { name: 'work limits', description: 'How many tasks of a kind run at once.' },
      { name: 'allowances', description: 'Shared quotas: fixed windows, a strict FIFO wait line, provider cooldowns.' },
    ],
  },
  {
    name: 'Events',
    tags: [
      { name: 'events', description: 'The durable journal, read by cursor or watched with a long poll.' },
      { name: 'webhooks', description: 'Destinations the journal is delivered to, signed, and the audit of each attempt.' },
    ],
  },
  {
    name: 'The space',
    tags: [
      { name: 'limits', description: 'The space\'s limits and the organization\'s usage.' },
      { name: 'diagnostics', description: 'What the space holds, what waits and why.' },
    ],
  },
  { name: 'Operator', tags: [{ name: 'admin', description: 'The operator API (organizations, spaces, keys, clock); answers only when the server has an admin token.' }] },
];

/** Applies the contract to the generated document, in place, and returns it. */
export function applyContract<T>(generated: T): T {
  const doc = generated as Json;
  doc.info = { ...doc.info, ...info };
  // Relative: the server that serves the document is the one to call (try-it-out at /docs included).
  doc.servers = [{ url: '/', description: 'The server serving this document' }];
  doc.tags = tagGroups.flatMap((group) => group.tags);
  doc['x-tagGroups'] = tagGroups.map((group) => ({ name: group.name, tags: group.tags.map((tag) => tag.name) }));
  doc.components = {
    ...doc.components,
    headers: replyHeaders,
    securitySchemes: {
      apiKey: { type: 'http', scheme: 'bearer', description: 'An API key of the space\'s organization (`baton_...`), with the permission the operation needs.' },
      adminToken: { type: 'http', scheme: 'bearer', description: 'The operator token (BATON_ADMIN_TOKEN).' },
    },
  };
  doc.security = [{ apiKey: [] }];
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const [method, operation] of Object.entries<Json>(item)) describe(method.toUpperCase(), path, operation);
  }
  doc.paths = inReadingOrder(doc.paths ?? {}, doc.tags.map((tag: Json) => tag.name as string));
  dropUnusedSchemas(doc);
  addFieldExamples(doc.paths);
  addFieldExamples(doc.components.schemas);
  return generated;
}

/** Paths ordered by their first operation's tag, as the tags are: renderers and generators list them so. */
function inReadingOrder(paths: Json, tagOrder: string[]): Json {
  const rank = (item: Json): number => {
    const tag = (Object.values<Json>(item)[0]?.tags ?? [])[0] as string | undefined;
    const at = tag === undefined ? -1 : tagOrder.indexOf(tag);
    return at === -1 ? tagOrder.length : at;
  };
  // Array.prototype.sort is stable: within a tag, paths keep the order their routes were registered in.
  return Object.fromEntries(Object.entries<Json>(paths).sort(([, a], [, b]) => rank(a) - rank(b)));
}

/**
 * fastify-type-provider-zod registers an input twin (`TaskInput`) of every schema with an id,
 * used only where the schema is a request body; the others are dropped so a generated client
 * carries no dead types. Repeats until nothing more goes (a dropped schema may have held the last
 * reference to another).
 */
function dropUnusedSchemas(doc: Json): void {
  const schemas: Json = doc.components?.schemas ?? {};
  for (let dropped = true; dropped; ) {
    dropped = false;
    const text = JSON.stringify(doc);
    for (const name of Object.keys(schemas)) {
      const uses = text.split(`"#/components/schemas/${name}"`).length - 1;
      const selfUses = JSON.stringify(schemas[name]).split(`"#/components/schemas/${name}"`).length - 1;
      if (uses === selfUses) {
        delete schemas[name];
        dropped = true;
      }
    }
  }
}

/** The key of an operation in operations.ts. */
export function contractKey(method: string, path: string): string {
  return `${method} ${path.startsWith(spacePrefix) ? path.slice(spacePrefix.length) : path}`;
}

function describe(method: string, path: string, operation: Json): void {
  const contract: OperationContract | undefined = operations[contractKey(method, path)];
  // No entry: left as generated, without operationId; the contract test names it.
  if (!contract) return;
  const admin = path.startsWith(adminPrefix);
  operation.operationId = contract.operationId;
  operation.summary = contract.summary;
  // One group per operation: a reference lists it once, and a generator files it once.
  operation.tags = [operation.tags?.[0] ?? (admin ? 'admin' : 'tasks')];
  if (admin) operation.security = [{ adminToken: [] }];
  const write = method !== 'GET';
  for (const parameter of operation.parameters ?? []) {
    if (parameter.in === 'header' && parameter.name.toLowerCase() === 'idempotency-key') describeIdempotencyKey(parameter, contract.idempotencyKeyRequired === true);
  }
  if (contract.example !== undefined && operation.requestBody?.content?.['application/json']) operation.requestBody.content['application/json'].example = contract.example;

  const codes = codesOf(method, path, contract, admin);
  const responses: Json = operation.responses ?? {};
  const statuses = new Set<number>([...Object.keys(responses).map(Number), ...errorStatusesOf(write, admin, codes)]);
  if (contract.replies?.[204]) statuses.add(204);
  const described: Json = {};
  for (const status of [...statuses].sort((a, b) => a - b)) {
    described[status] = status < 300 ? success(status, method, responses[status], contract, write) : errorReply(status, codes, admin ? 'operator' : 'user');
  }
  operation.responses = described;
}

/** Every route of a kind can answer these: the user API's checks and limits, the operator API's. */
function errorStatusesOf(write: boolean, admin: boolean, codes: readonly ErrorCode[]): number[] {
  const statuses = admin ? [400, 401, 404, 503] : [400, 401, 403, 404, 429, 503];
  // Every write reads a body (413 past 1 MiB); a user write takes an Idempotency-Key (409 in flight, 422 reused).
  if (write) statuses.push(413, ...(admin ? [] : [409, 422]));
  statuses.push(...codes.map((code) => errorTable[code].status));
  return statuses.filter((status) => errorStatuses.includes(status));
}

/** The codes behind the operation's errors: its own, and the limits its route policy meets (docs/design/0016-limits-and-retry-after.md). */
function codesOf(method: string, path: string, contract: OperationContract, admin: boolean): ErrorCode[] {
  const codes: ErrorCode[] = [...(contract.codes ?? [])];
  if (contract.idempotencyKeyRequired) codes.push('IDEMPOTENCY_KEY_REQUIRED');
  if (admin) return codes;
  codes.push('SERVICE_RATE_LIMITED', 'RATE_LIMITED');
  const policy = policyOf(method, path.replace(/\{(\w+)\}/g, ':$1').slice(spacePrefix.length));
  if (!policy.read && !policy.recovery) codes.push('OPERATIONS_EXHAUSTED');
  if (policy.claims) codes.push('CONCURRENCY_LIMITED');
  if (policy.createsTasks || policy.createsRuns) codes.push('PLAN_LIMIT_REACHED');
  if (method === 'PUT' && path.endsWith('/limits')) codes.push('ENTITLEMENT_EXCEEDED');
  return codes;
}

function describeIdempotencyKey(parameter: Json, required: boolean): void {
  parameter.name = 'Idempotency-Key';
  parameter.required = required;
  parameter.description = required
    ? 'Required: without it the call is 400 IDEMPOTENCY_KEY_REQUIRED. 1 to 255 characters, new for each distinct call (a UUID does); a repeat within 24 hours answers the first reply.'
    : 'Optional: 1 to 255 characters, new for each distinct call (a UUID does); a repeat within 24 hours answers the first reply instead of acting twice.';
  parameter.example = 'b7e3c1d2-9f4a-4e8b-a6c5-1d2e3f4a5b6c';
}

function success(status: number, method: string, generated: Json | undefined, contract: OperationContract, write: boolean): Json {
  const headers: Json = { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } };
  // An empty 204 is never stored under its key, so it is never a replay.
  if (write && status !== 204) headers['Idempotent-Replayed'] = { $ref: '#/components/headers/Idempotent-Replayed' };
  const description = contract.replies?.[status as 200 | 201 | 204] ?? defaultSuccess(status, method, generated);
  // A 204 has no body: no content, so a generated client types its data as never.
  if (status === 204) return { description, headers };
  const example = contract.replyExamples?.[status as 200 | 201];
  const media = generated?.content?.['application/json'];
  const content = example === undefined || !media ? generated?.content : { ...generated!.content, 'application/json': { ...media, example } };
  return { ...generated, ...(content ? { content } : {}), description, headers };
}

function defaultSuccess(status: number, method: string, generated: Json | undefined): string {
  if (status === 201) return 'Created.';
  if (method === 'GET') {
    const schema = generated?.content?.['application/json']?.schema;
    return schema?.properties?.nextCursor ? 'A page of results; pass `nextCursor` as `cursor` for the next one (null on the last page).' : 'Found.';
  }
  return 'Done: the body is the state after the call. A repeat with the same Idempotency-Key answers this reply again.';
}
