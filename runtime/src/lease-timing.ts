/**
 * The lease arithmetic of every holder in the runtime: a worker's task deliveries
 * (worker/lease-keeper.ts) and withClaim's claims (claims.ts) count their leases here, so the two
 * cannot drift apart.
 *
 * The server owns the lease; the holder keeps a local deadline on its own clock and uses its
 * token only before it. That deadline must never fall after the server's, or the holder would
 * go on working (and writing) while the server has handed the work to someone else.
 */

/** The shortest wait before retrying a failed renew; the lease deadline still bounds the retries. */
export const minRenewRetryMs = 250;

export interface LeaseTimes {
  /** Past this moment on the local clock the lease is taken as lost, whatever the server says later. */
  deadlineMs: number;
  /** When to renew: a third of the way into the lease, so two more tries fit before it runs out. */
  renewAtMs: number;
}

/**
 * The local deadline and renewal time of a lease the server granted (or extended) as
 * `leaseExpiresAt` in reply to a request for `leaseSeconds`.
 *
 * `countFromMs` is a moment on the local clock no later than the moment the server started the
 * lease: the moment the request was sent. The server cannot start a lease before the request
 * reaches it, so "sent + leaseSeconds" is never later than the server's expiry, whatever the
 * network did on the way and however long the reply took to come back; counting from the reply
 * instead would overshoot by the reply's travel time.
 *
 * The deadline is the earlier of that count and the server's leaseExpiresAt read on the local
 * clock. Each covers the other's blind spot: the count ignores clock skew but cannot see that the
 * server granted less than was asked (maxLeaseSeconds); leaseExpiresAt tells that, but reads late
 * on a clock running behind the server's. Both err towards stopping early.
 */
export function leaseTimes(leaseExpiresAt: string, leaseSeconds: number, countFromMs: number): LeaseTimes {
  const expiresAtMs = Date.parse(leaseExpiresAt);
  const askedUntilMs = countFromMs + leaseSeconds * 1000;
  const deadlineMs = Number.isNaN(expiresAtMs) ? askedUntilMs : Math.min(expiresAtMs, askedUntilMs);
  return { deadlineMs, renewAtMs: countFromMs + Math.max(0, deadlineMs - countFromMs) / 3 };
}

/** After a failed renew, try again a third of the time left (at least minRenewRetryMs): two more tries fit. */
export function renewRetryInMs(nowMs: number, deadlineMs: number): number {
  return Math.max(minRenewRetryMs, (deadlineMs - nowMs) / 3);
}
