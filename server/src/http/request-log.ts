import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** The fields of the one line each request leaves in the log (docs/operator.md, "Logs"). */
export interface RequestLine {
  method: string;
  /** The route pattern (`/v1/spaces/:spaceId/tasks`); null when no route matched. */
  route: string | null;
  /**
   * The URL path without its query string (the query may carry cursors nobody needs in logs),
   * with any segment shaped like a secret replaced by `[redacted]` (redactSecrets).
   */
  path: string;
  statusCode: number;
  durationMs: number;
}

/**
 * One line per request, written when the reply has gone out. Only what identifies the request
 * and its outcome: never headers (credentials) or bodies (lease tokens, key secrets, payloads).
 * The request logger already binds `reqId`.
 */
export function installRequestLog(app: FastifyInstance): void {
  app.addHook('onResponse', async (request, reply) => {
    const line = requestLine(request, reply);
    // A 4xx is the client's business and routine; a 5xx is ours and wants attention. A 503 is
    // an outage or a drain, each logged once on its own (store-outage.ts, main.ts): at error
    // level every request of an outage would bury that one line.
    if (line.statusCode >= 500 && line.statusCode !== 503) request.log.error(line, 'request failed');
    else request.log.info(line, 'request');
  });
}

export function requestLine(request: FastifyRequest, reply: FastifyReply): RequestLine {
  return {
    method: request.method,
    route: request.routeOptions.url ?? null,
    path: redactSecrets(request.url.split('?', 1)[0] ?? request.url),
    statusCode: reply.statusCode,
    // Tenths of a millisecond: finer digits are noise and only lengthen the line.
    durationMs: Math.round(reply.elapsedTime * 10) / 10,
  };
}

/**
 * A client that puts a secret where an id belongs (a claim token in place of a claim id, a key
 * in a path) must not find it in the operator's log: segments shaped like Baton's secrets are
 * masked. Keys start `bk_`, webhook secrets `whsec_`, and lease and claim tokens are 43 base64url
 * characters; ids are 36-character UUIDs and route words are short, so neither is ever masked.
 */
const secretShaped = /^(?:bk_|whsec_|[A-Za-z0-9_-]{40,}$)/;

export function redactSecrets(path: string): string {
  return path
    .split('/')
    .map((segment) => (secretShaped.test(segment) ? '[redacted]' : segment))
    .join('/');
}
