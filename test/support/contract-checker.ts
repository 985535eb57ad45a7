import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { Reply, TestServer } from './server';

/**
 * Holds the server's replies to its own OpenAPI document: a reply's status must be declared for
 * its operation, its body must match the declared schema (no body for a 204), an error's code
 * must be one the document lists for that status, and a 429 or 503 must carry Retry-After. Wrap a
 * TestServer with `checked` and every call through its `inject` is checked.
 */

type Json = Record<string, any>;

interface Operation {
  key: string;
  method: string;
  pattern: RegExp;
  /** Fewer parameters first: `/tasks/admit` wins over `/tasks/{id}`. */
  params: number;
  responses: Json;
}

export interface Seen {
  operation: string;
  status: number;
  code?: string;
}

export class ContractChecker {
  readonly problems: string[] = [];
  readonly seen: Seen[] = [];
  private readonly operations: Operation[] = [];
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly ajv: Ajv2020;

  constructor(readonly doc: Json) {
    // References into components become references into one registered schema, so they resolve.
    const rewritten = JSON.parse(JSON.stringify(doc).replaceAll('"#/components/schemas/', '"components#/$defs/')) as Json;
    this.ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(this.ajv);
    this.ajv.addSchema({ $id: 'components', $defs: rewritten.components?.schemas ?? {} });
    for (const [path, item] of Object.entries<Json>(rewritten.paths)) {
      for (const [method, operation] of Object.entries<Json>(item)) {
        const source = path.replace(/\{\w+\}/g, '[^/]+');
        this.operations.push({ key: `${method.toUpperCase()} ${path}`, method: method.toUpperCase(), pattern: new RegExp(`^${source}$`), params: (path.match(/\{/g) ?? []).length, responses: operation.responses });
      }
    }
    this.operations.sort((a, b) => a.params - b.params);
  }

  /** Checks one reply; returns the problems it adds. */
  check(method: string, url: string, reply: Reply): string[] {
    const found: string[] = [];
    const path = url.split('?')[0]!;
    const operation = this.operations.find((op) => op.method === method.toUpperCase() && op.pattern.test(path));
    const where = `${method} ${path} -> ${reply.statusCode}`;
    if (!operation) {
      if (reply.statusCode !== 404) found.push(`${where}: no operation of the document matches`);
      return this.keep(found);
    }
    const code = typeof reply.body?.error?.code === 'string' ? (reply.body.error.code as string) : undefined;
    this.seen.push({ operation: operation.key, status: reply.statusCode, ...(code ? { code } : {}) });
    const declared = operation.responses[String(reply.statusCode)];
    if (!declared) return this.keep([`${where}: status not declared for ${operation.key} (declared: ${Object.keys(operation.responses).join(', ')})`]);
    if (!reply.headers['x-request-id']) found.push(`${where}: no X-Request-Id`);
    if ((reply.statusCode === 429 || reply.statusCode === 503) && !/^[1-9]\d*$/.test(String(reply.headers['retry-after']))) found.push(`${where}: Retry-After missing or not whole seconds`);
    const media = declared.content?.['application/json'];
    if (!media) {
      if (reply.body !== undefined) found.push(`${where}: a body where the document declares none`);
      return this.keep(found);
    }
    const validate = this.validator(`${operation.key} ${reply.statusCode}`, media.schema);
    if (!validate(reply.body)) found.push(`${where}: body does not match the schema: ${this.ajv.errorsText(validate.errors)}; body ${JSON.stringify(reply.body).slice(0, 300)}`);
    if (code && media.examples && !(code in media.examples)) found.push(`${where}: code ${code} is not among those declared (${Object.keys(media.examples).join(', ')})`);
    return this.keep(found);
  }

  /** `server` with an `inject` that checks every reply (server.api and server.admin are not wrapped). */
  checked(server: TestServer): TestServer {
    return {
      ...server,
      inject: async (method, url, headers, body) => {
        const reply = await server.inject(method, url, headers, body);
        this.check(method, url, reply);
        return reply;
      },
    };
  }

  private validator(key: string, schema: Json): ValidateFunction {
    let validate = this.validators.get(key);
    if (!validate) {
      validate = this.ajv.compile(schema);
      this.validators.set(key, validate);
    }
    return validate;
  }

  private keep(found: string[]): string[] {
    this.problems.push(...found);
    return found;
  }
}
