import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { ErrorBody } from './error-handler';

/**
 * Node's HTTP server refuses some requests before Fastify sees them: headers over its 16 KiB
 * (431), a request whose headers do not arrive in time (408), bytes that are not HTTP (400). By
 * default those answers had bodies of Fastify's own and no X-Request-Id. Here they wear the
 * envelope (docs/design/0004-error-codes.md) like every other reply: VALIDATION_FAILED, with Node's status kept,
 * since it says more than 400 to a proxy or an HTTP library.
 */
export function clientErrorHandler(newRequestId: () => string) {
  // Fastify calls it with the instance as `this`: its logger is the server's.
  return function (this: FastifyInstance, error: Error & { code?: string }, socket: Socket): void {
    // A reset connection has nobody left to answer (Node's advice for 'clientError').
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const { status, path, problem } = refusalOf(error.code);
    const requestId = newRequestId();
    const body: ErrorBody = { error: { code: 'VALIDATION_FAILED', message: `${path}: ${problem}`, requestId, details: [{ path, message: problem }] } };
    const text = JSON.stringify(body);
    this.log.info({ reqId: requestId, statusCode: status, clientError: error.code }, 'request refused by the HTTP parser');
    if (socket.writable) {
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${text}`,
      );
    }
    // As Node does after its own answer: the parser cannot go on with this connection.
    socket.destroy();
  };
}

function refusalOf(code: string | undefined): { status: number; path: string; problem: string } {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, path: 'headers', problem: 'the request line and headers exceed 16 KiB' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, path: 'request', problem: 'the request did not arrive in time' };
    default:
      return { status: 400, path: 'request', problem: 'not a valid HTTP/1.1 request' };
  }
}
