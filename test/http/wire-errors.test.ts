import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore, SeededRandom, SystemClock } from '@baton/core';
import { createBaton, type Baton } from '@baton-coordination/server/host/baton';

/**
 * Refusals a client meets on a real socket, before any route runs: a body over the limit, headers
 * over Node's limit, a request that never finishes, bytes that are not HTTP. `inject` cannot show
 * these (it has no socket to reset and no parser of its own), so a server listens on a port here.
 */
describe('errors on the wire (a listening server, real sockets)', () => {
  const adminToken = 'wire-admin';
  let baton: Baton;
  let port: number;
  let base: string;
  let key: string;
  let box: string;

  beforeAll(async () => {
    baton = await createBaton({ store: new MemoryStore(), clock: new SystemClock(), random: new SeededRandom(5), adminToken });
    await baton.app.listen({ port: 0, host: '127.0.0.1' });
    port = (baton.app.server.address() as AddressInfo).port;
    const admin = async (url: string, body: object) =>
      (await baton.app.inject({ method: 'POST', url: `/admin/v1${url}`, headers: { authorization: `Bearer ${adminToken}` }, payload: body })).json();
    const org = await admin('/orgs', { name: 'acme', plan: 'TEAM' });
    const space = await admin(`/orgs/${org.id}/spaces`, { name: 'main' });
    key = (await admin(`/orgs/${org.id}/keys`, { name: 'k' })).secret as string;
    base = `http://127.0.0.1:${port}/v1/spaces/${space.id}`;
    const created = await fetch(`${base}/mailboxes`, { method: 'POST', headers: headers('mk'), body: JSON.stringify({ name: 'wire' }) });
    box = ((await created.json()) as { id: string }).id;
  });
  afterAll(async () => baton.drainAndClose());

  const headers = (idem?: string): Record<string, string> => ({
    authorization: `Bearer ${key}`,
    'content-type': 'application/json',
    ...(idem ? { 'idempotency-key': idem } : {}),
  });
  const bigMessage = (bytes: number): string => JSON.stringify({ scopeId: '11111111-1111-4111-8111-111111111111', payload: 'x'.repeat(bytes) });

  const expectEnvelope = async (response: Response, status: number, code: string): Promise<void> => {
    expect(response.status).toBe(status);
    const body = (await response.json()) as { error: { code: string; requestId: string } };
    expect(body.error.code).toBe(code);
    expect(body.error.requestId).toBe(response.headers.get('x-request-id'));
  };

  it.each([2, 8, 15])('answers a %i MB body with the 413 envelope, read by fetch on every try (was a reset or EPIPE)', async (mb) => {
    const body = bigMessage(mb * 1024 * 1024);
    for (let attempt = 0; attempt < 5; attempt++) {
      const response = await fetch(`${base}/mailboxes/${box}/messages`, { method: 'POST', headers: headers(`big-${mb}-${attempt}`), body });
      await expectEnvelope(response, 413, 'PAYLOAD_TOO_LARGE');
    }
  });

  it('answers a body over the limit sent slowly without Content-Length (chunked) with the same 413 envelope', async () => {
    const chunk = new TextEncoder().encode('x'.repeat(64 * 1024));
    for (let attempt = 0; attempt < 4; attempt++) {
      let sent = 0;
      const stream = new ReadableStream<Uint8Array>({
        // A client slower than the server: it is still sending when the server has seen 1 MiB.
        async pull(controller) {
          await new Promise((resolve) => setTimeout(resolve, 5));
          if (sent === 0) controller.enqueue(new TextEncoder().encode('{"scopeId":"11111111-1111-4111-8111-111111111111","payload":"'));
          if (sent >= 32) {
            controller.enqueue(new TextEncoder().encode('"}'));
            controller.close();
            return;
          }
          sent += 1;
          controller.enqueue(chunk);
        },
      });
      const response = await fetch(`${base}/mailboxes/${box}/messages`, { method: 'POST', headers: headers(`chunked-${attempt}`), body: stream, duplex: 'half' } as RequestInit);
      await expectEnvelope(response, 413, 'PAYLOAD_TOO_LARGE');
    }
  });

  // 6 MB: loopback socket buffers here absorb about 3 MB, so a smaller body is all sent before
  // the server closes whatever it does; the reset needs a body still on its way.
  it('lets a client that reads only once its whole 6 MB body is sent read the 413 (was a reset: the server closed mid-upload)', async () => {
    const body = bigMessage(6 * 1024 * 1024);
    for (let attempt = 0; attempt < 3; attempt++) {
      const head = `POST ${new URL(base).pathname}/mailboxes/${box}/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nIdempotency-Key: slow-${attempt}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
      const reply = await rawExchange(port, [head, body], { readAfterSend: true });
      expect(reply.status).toBe(413);
      expect(reply.body.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', requestId: reply.headers['x-request-id'] });
    }
  });

  it('answers a declared body over 16 MiB with 413 at once, without waiting for it', async () => {
    const reply = await rawExchange(port, [
      `POST ${new URL(base).pathname}/mailboxes/${box}/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${17 * 1024 * 1024}\r\n\r\n{"payload":"`,
    ]);
    expect(reply.status).toBe(413);
    expect(reply.body.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', requestId: reply.headers['x-request-id'] });
  });

  it('answers 64 KB of headers with 431 in the envelope and an X-Request-Id (was Node’s own body, no id)', async () => {
    const reply = await rawExchange(port, [`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`]);
    expect(reply.status).toBe(431);
    expect(reply.headers['x-request-id']).toBeTruthy();
    expect(reply.body.error).toMatchObject({ code: 'VALIDATION_FAILED', requestId: reply.headers['x-request-id'], details: [{ path: 'headers' }] });
  });

  it('answers a client that never finishes its headers with 408 in the envelope and an X-Request-Id', async () => {
    // A server of its own with short header timeouts, so a slow client is refused in a second
    // rather than in Node's 60 to 90 (and the big uploads above are not cut on a busy machine).
    const impatient = await createBaton({ store: new MemoryStore(), clock: new SystemClock(), random: new SeededRandom(6), http: { headersTimeoutMs: 500, timeoutCheckIntervalMs: 100 } });
    await impatient.app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const reply = await rawExchange((impatient.app.server.address() as AddressInfo).port, ['GET /healthz HTTP/1.1\r\nHost: x\r\n']);
      expect(reply.status).toBe(408);
      expect(reply.headers['x-request-id']).toBeTruthy();
      expect(reply.body.error).toMatchObject({ code: 'VALIDATION_FAILED', requestId: reply.headers['x-request-id'] });
    } finally {
      await impatient.drainAndClose();
    }
  });

  it('answers bytes that are not HTTP with 400 in the envelope and an X-Request-Id', async () => {
    const reply = await rawExchange(port, ['HELLO THERE\r\n\r\n']);
    expect(reply.status).toBe(400);
    expect(reply.body.error).toMatchObject({ code: 'VALIDATION_FAILED', requestId: reply.headers['x-request-id'] });
  });
});

interface RawReply {
  status: number;
  headers: Record<string, string>;
  body: any;
}

/**
 * Writes `parts` on a fresh connection and reads one reply (the server closes after these
 * refusals). `readAfterSend`: read nothing until everything is written, as a client busy
 * elsewhere (or a naive one) does; a server that closes mid-upload then resets the connection
 * and the reply is lost, which is what Node's fetch met under a busy test suite.
 */
async function rawExchange(port: number, parts: string[], options: { readAfterSend?: boolean } = {}): Promise<RawReply> {
  const socket = connect(port, '127.0.0.1');
  let failure: Error | undefined;
  socket.on('error', (error) => (failure ??= error));
  await new Promise((resolve) => socket.once('connect', resolve));
  const chunks: Buffer[] = [];
  socket.on('data', (d: Buffer) => chunks.push(d));
  if (options.readAfterSend) socket.pause();
  for (const part of parts) await new Promise<void>((resolve) => socket.write(part, () => resolve()));
  socket.resume();
  await new Promise((resolve) => socket.once('close', resolve));
  if (failure && chunks.length === 0) throw failure;
  const text = Buffer.concat(chunks).toString('utf8');
  const [head = '', ...rest] = text.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  const bodyText = rest.join('\r\n\r\n');
  return { status: Number(statusLine.split(' ')[1]), headers, body: bodyText ? JSON.parse(bodyText) : undefined };
}
