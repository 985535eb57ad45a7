import { MemoryStore } from '@baton/core';
import { createLogger, redactedMark } from '@baton-coordination/server/host/logger';
import type { Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { adminToken, idem, startTestServer, type CallOptions, type Reply, type TestServer } from '../support/server';

/**
 * What the server writes to its log (docs/operator.md, "Logs"): one line per request, and never
 * a credential. The logger is the one main.ts builds, writing JSON into memory. Logging does not
 * depend on the store, so one memory-backed server is enough.
 */

const scopeId = '11111111-1111-4111-8111-111111111111';

interface LogLine {
  level: number;
  msg: string;
  reqId?: string;
  method?: string;
  route?: string | null;
  path?: string;
  statusCode?: number;
  durationMs?: number;
  [key: string]: unknown;
}

/** A JSON logger writing into an array, so a test can read every line the server wrote. */
function memoryLogger(): { logger: Logger; text(): string; lines(): LogLine[] } {
  const chunks: string[] = [];
  const logger = createLogger({ level: 'info', format: 'json', destination: { write: (chunk: string) => void chunks.push(chunk) } });
  const text = (): string => chunks.join('');
  const lines = (): LogLine[] => text().split('\n').filter(Boolean).map((line) => JSON.parse(line) as LogLine);
  return { logger, text, lines };
}

const requestLines = (lines: LogLine[]): LogLine[] => lines.filter((line) => line.msg === 'request' || line.msg === 'request failed');

describe('request logging and redaction', () => {
  const log = memoryLogger();
  let server: TestServer;
  /** Every reply the flow got, with the route it meant to hit and the path it should log. */
  const calls: Array<{ route: string; path: string; reply: Reply }> = [];
  const leaseTokens: string[] = [];
  const wrongKey = `bk_${'0'.repeat(32)}_${'A'.repeat(43)}`;

  beforeAll(async () => {
    // The operator's part: startTestServer creates an org, a space and a key through /admin/v1.
    server = await startTestServer(new MemoryStore(), { logger: log.logger });
    const call = async (route: string, method: 'GET' | 'POST', url: string, options: CallOptions): Promise<Reply> => {
      const reply = await server.api(method, url, options);
      calls.push({ route, path: `/v1/spaces/${server.spaceId}${url.split('?')[0]}`, reply });
      return reply;
    };
    const mailbox = await call('/v1/spaces/:spaceId/mailboxes', 'POST', '/mailboxes', { body: { name: 'jobs' }, idem: idem() });
    expect(mailbox.statusCode).toBe(201);
    const task = await call('/v1/spaces/:spaceId/tasks', 'POST', '/tasks', { body: { scopeId, mailboxId: mailbox.body.id, taskKey: 't-1', input: { n: 1 } }, idem: idem() });
    expect(task.statusCode).toBe(201);
    const admitted = await call('/v1/spaces/:spaceId/tasks/admit', 'POST', '/tasks/admit', { body: { scopeId, mailboxId: mailbox.body.id, holder: 'w-1', holderSession: 's-1' }, idem: idem() });
    expect(admitted.statusCode).toBe(200);
    leaseTokens.push(admitted.body.token);
    const completed = await call('/v1/spaces/:spaceId/messages/:id/complete', 'POST', `/messages/${admitted.body.messageId}/complete`, { body: { token: admitted.body.token, result: { payload: { ok: true } } } });
    expect(completed.statusCode).toBe(200);
    // The query string stays out of the logged path.
    const unauthenticated = await call('/v1/spaces/:spaceId/mailboxes', 'GET', '/mailboxes?limit=5', { key: wrongKey });
    expect(unauthenticated.statusCode).toBe(401);
    const invalid = await call('/v1/spaces/:spaceId/tasks', 'POST', '/tasks', { body: { scopeId, mailboxId: mailbox.body.id, taskKey: '' }, idem: idem() });
    expect(invalid.statusCode).toBe(400);
  });
  afterAll(async () => server.close());

  it('writes one line per request with reqId, method, route, path, status and duration', () => {
    const lines = requestLines(log.lines());
    // Three operator calls set the tenant up, then the flow's own.
    expect(lines).toHaveLength(3 + calls.length);
    expect(lines.slice(0, 3).map((l) => l.route)).toEqual(['/admin/v1/orgs', '/admin/v1/orgs/:orgId/spaces', '/admin/v1/orgs/:orgId/keys']);
    expect(new Set(lines.map((l) => l.reqId)).size).toBe(lines.length);
    for (const { route, path, reply } of calls) {
      const line = lines.find((l) => l.reqId === reply.headers['x-request-id']);
      // 4xx lines stay at info (30): a client's mistake is routine, not an alarm.
      expect(line, route).toMatchObject({ level: 30, msg: 'request', route, path, statusCode: reply.statusCode, method: expect.stringMatching(/^(GET|POST)$/) });
      expect(line!.durationMs).toEqual(expect.any(Number));
      expect(line!.durationMs).toBeGreaterThanOrEqual(0);
    }
    expect(calls.map((c) => c.reply.statusCode)).toEqual([201, 201, 200, 200, 401, 400]);
  });

  it('writes no request or response bodies and no headers', () => {
    for (const line of requestLines(log.lines())) {
      expect(Object.keys(line).sort()).toEqual(['durationMs', 'hostname', 'level', 'method', 'msg', 'path', 'pid', 'reqId', 'route', 'statusCode', 'time']);
    }
  });

  it('never writes a key secret, the admin token, a lease token or a Bearer header', () => {
    const text = log.text();
    expect(leaseTokens).toHaveLength(1);
    for (const secret of [server.key, wrongKey, adminToken, ...leaseTokens]) expect(text).not.toContain(secret);
    expect(text).not.toContain('Bearer');
  });

  it('masks a secret a client put in the path where an id belongs, and leaves ids alone', async () => {
    const misplaced = [
      await server.api('GET', `/claims/${leaseTokens[0]}`),
      await server.api('POST', `/messages/${server.key}/complete`, { body: { token: 't' } }),
      await server.api('GET', '/claims/whsec_c2VjcmV0LXNpZ25pbmcta2V5'),
    ];
    const lines = requestLines(log.lines());
    for (const reply of misplaced) {
      const line = lines.find((l) => l.reqId === reply.headers['x-request-id'])!;
      expect(line.path).toMatch(new RegExp(`^/v1/spaces/${server.spaceId}/(claims|messages)/\\[redacted\\]`));
    }
    for (const secret of [server.key, leaseTokens[0]!, 'whsec_c2VjcmV0LXNpZ25pbmcta2V5']) expect(log.text()).not.toContain(secret);
  });

  it('logs a 5xx at error level, and redacts what the failure carried', async () => {
    const before = log.lines().length;
    // A failure that carries the request's credentials and a token, as a careless error might.
    const failure = Object.assign(new Error('disk on fire'), { headers: { authorization: `Bearer ${server.key}` }, token: leaseTokens[0] });
    const read = vi.spyOn(server.baton.deps.store, 'read').mockRejectedValueOnce(failure);
    try {
      const res = await server.api('GET', '/mailboxes', { key: server.key, headers: { 'x-request-id': 'req-5xx' } });
      expect(res.statusCode).toBe(500);
    } finally {
      read.mockRestore();
    }
    const lines = log.lines().slice(before);
    expect(lines.find((l) => l.msg === 'request failed')).toMatchObject({ level: 50, reqId: 'req-5xx', statusCode: 500, route: '/v1/spaces/:spaceId/mailboxes' });
    const logged = lines.find((l) => l.msg === 'unexpected error') as { err: { message: string; headers: { authorization: string }; token: string } } | undefined;
    expect(logged?.err).toMatchObject({ message: 'disk on fire', headers: { authorization: redactedMark }, token: redactedMark });
    const text = log.text();
    expect(text).not.toContain(server.key);
    expect(text).not.toContain(leaseTokens[0]);
  });

  it('redaction is real: headers, bodies, secrets and tokens logged through the same logger come out censored', () => {
    const before = log.lines().length;
    const headers = { authorization: `Bearer ${server.key}`, 'x-api-key': server.key, cookie: 'session=s3cr3t', 'idempotency-key': 'idem-visible' };
    log.logger.info({ req: { method: 'POST', headers } }, 'probe nested');
    log.logger.info({ headers, body: { token: 'lease-xyz' } }, 'probe top');
    log.logger.info({ secret: server.key, token: 'lease-xyz', adminToken, key: { secret: server.key } }, 'probe values');
    const [nested, top, values] = log.lines().slice(before);
    const censored = { authorization: redactedMark, 'x-api-key': redactedMark, cookie: redactedMark, 'idempotency-key': 'idem-visible' };
    expect(nested).toMatchObject({ msg: 'probe nested', req: { method: 'POST', headers: censored } });
    expect(top).toMatchObject({ msg: 'probe top', headers: censored, body: redactedMark });
    expect(values).toMatchObject({ msg: 'probe values', secret: redactedMark, token: redactedMark, adminToken: redactedMark, key: { secret: redactedMark } });
    const text = log.text();
    for (const leak of [server.key, 's3cr3t', 'lease-xyz', adminToken, 'Bearer']) expect(text).not.toContain(leak);
  });
});
