import type { IncomingMessage } from 'node:http';

/** docs/design/0024-oversized-bodies.md: the most of a body over the limit that is read (and thrown away) before its 413. */
export const maxDrainBytes = 16 * 1024 * 1024;

/** A client that stops sending mid-body is not waited for longer than this. */
export const maxDrainMs = 30_000;

/**
 * Reads the rest of a request body and throws it away, so that the 413 for a body over the limit
 * goes out once the client has sent it all. Fastify answers as soon as the body passes the limit
 * (or at once, when Content-Length says it will) and closes the connection; a client still
 * uploading then writes into a closed socket, the kernel resets the connection, and the reply,
 * unread in the client's buffer, is lost: Node's fetch saw EPIPE or a reset instead of the 413
 * (issue 27). Resolves true when the body ended (or the client went away), false when it is
 * longer than `maxBytes` or stalls past `maxMs`: the reply then goes out at once, as before.
 */
export function drainBody(raw: IncomingMessage, maxBytes = maxDrainBytes, maxMs = maxDrainMs): Promise<boolean> {
  if (raw.complete || raw.destroyed) return Promise.resolve(true);
  if (Number(raw.headers['content-length']) > maxBytes) return Promise.resolve(false);
  return new Promise((resolve) => {
    let drainedBytes = 0;
    const finish = (ended: boolean): void => {
      clearTimeout(timer);
      raw.off('data', onData);
      raw.off('end', onEnd);
      raw.off('close', onEnd);
      raw.off('error', onEnd);
      resolve(ended);
    };
    const onData = (chunk: Buffer): void => {
      drainedBytes += chunk.length;
      if (drainedBytes > maxBytes) finish(false);
    };
    const onEnd = (): void => finish(true);
    // I/O pacing, not domain time: not the injected clock.
    const timer = setTimeout(() => finish(false), maxMs);
    raw.on('data', onData);
    raw.once('end', onEnd);
    raw.once('close', onEnd);
    raw.once('error', onEnd);
    raw.resume();
  });
}
