import { StoreUnavailable } from '@baton/core';

/**
 * SQLSTATEs that say the database cannot serve this connection now: admin_shutdown (a fast or
 * immediate shutdown, pg_terminate_backend), crash_shutdown (another backend crashed),
 * cannot_connect_now (starting up, shutting down, in recovery), too_many_connections. Class 08
 * (connection exception) is matched as a class.
 */
const unreachableStates: Record<string, string> = {
  '57P01': 'the database ended the connection (57P01 admin_shutdown)',
  '57P02': 'the database restarts after a crash (57P02 crash_shutdown)',
  '57P03': 'the database is starting up or shutting down (57P03 cannot_connect_now)',
  '53300': 'the database has no connection to spare (53300 too_many_connections)',
};

/** Socket errors on the way to the database (Node's codes). */
const unreachableSockets: Record<string, string> = {
  ECONNREFUSED: 'connection refused (ECONNREFUSED)',
  ECONNRESET: 'connection reset (ECONNRESET)',
  EPIPE: 'connection closed while writing (EPIPE)',
  ETIMEDOUT: 'connection timed out (ETIMEDOUT)',
  EHOSTUNREACH: 'host unreachable (EHOSTUNREACH)',
  ENETUNREACH: 'network unreachable (ENETUNREACH)',
  ENOTFOUND: 'host name not found (ENOTFOUND)',
  EAI_AGAIN: 'host name lookup failed (EAI_AGAIN)',
};

/** pg's and pg-pool's own errors for a lost or missing connection: they carry no code, only these messages. */
const unreachableMessages: Array<[RegExp, string]> = [
  [/^Connection terminated due to connection timeout/, 'no connection within the connect timeout'],
  [/^Connection terminated/, 'connection terminated'],
  [/^timeout exceeded when trying to connect$/, 'no connection within the pool timeout'],
  [/^Client has encountered a connection error and is not queryable$/, 'connection lost'],
  [/^Client was closed and is not queryable$/, 'connection closed'],
];

/**
 * Why `error` means PostgreSQL cannot be reached, or undefined when it is anything else: a
 * constraint, a failed guard, a bug. Those stay INTERNAL (500, logged with their stack); only
 * these become StoreUnavailable (503 with Retry-After, logged once per outage).
 */
export function unreachableReason(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (/^08[0-9A-Z]{3}$/.test(code)) return `connection exception (${code})`;
    const known = unreachableStates[code] ?? unreachableSockets[code];
    if (known) return known;
  }
  // Node's connect tries each address of a host name and fails with all of their errors.
  if (error instanceof AggregateError) return error.errors.map(unreachableReason).find((reason) => reason !== undefined);
  const message = error instanceof Error ? error.message : '';
  return unreachableMessages.find(([pattern]) => pattern.test(message))?.[1];
}

/** `error` as StoreUnavailable when PostgreSQL could not be reached, else `error` itself. */
export function asStoreError(error: unknown): unknown {
  if (error instanceof StoreUnavailable) return error;
  const reason = unreachableReason(error);
  return reason === undefined ? error : new StoreUnavailable(reason, error);
}
