import type { OpContext } from '../context';
import { conflict, forbidden, notFound } from '../errors';
import { decodePositionCursor, encodePositionCursor } from '../paging';
import type { DeliveryAttemptView, DestinationCreateBody, DestinationView } from '../schemas/destinations';
import type { Page } from '../store/page';
import type { Tx } from '../store/store';
import type { AttemptFilter, Destination } from './model';
import { deliveryAttemptView, destinationView } from './views';

/**
 * Destination set-up and reads, and the delivery audit. The secret arrives sealed: the server
 * makes and seals it (server/src/webhooks/seal.ts) and shows it once, in the create reply.
 * Destinations emit no journal events: they are configuration that would otherwise feed
 * itself (a destination taking `*` would receive its own pauses).
 */
export async function createDestination(ctx: OpContext, body: DestinationCreateBody, sealSecret: (id: string) => string): Promise<DestinationView> {
  const id = ctx.random.uuid();
  const destination: Destination = {
    id,
    spaceId: ctx.spaceId,
    url: body.url,
    eventTypes: body.eventTypes,
    // Sealed with the id as associated data: the sealed form opens on this row only.
    sealedSecret: sealSecret(id),
    state: 'ACTIVE',
    // From the journal's visible end: nothing before the destination is owed (the dispatcher also
    // passes over events older than createdAt), and anything that commits later sorts after it.
    cursor: await ctx.tx.events.tail(ctx.spaceId),
    lastDeliveredEventId: null,
    deliveredCount: 0,
    consecutiveFailures: 0,
    failedCount: 0,
    failingSince: null,
    nextAttemptAt: ctx.nowMs,
    leaseExpiresAt: null,
    leaseToken: null,
    pausedAt: null,
    pausedReason: null,
    lastError: null,
    createdAt: ctx.nowMs,
    updatedAt: ctx.nowMs,
  };
  await ctx.tx.destinations.insert(destination);
  return destinationView(destination);
}

export async function getDestination(tx: Tx, spaceId: string, id: string): Promise<DestinationView> {
  const d = await tx.destinations.get(spaceId, id);
  if (!d) throw notFound('destination');
  return destinationView(d);
}

export async function listDestinations(tx: Tx, spaceId: string, cursor: string | undefined, limit: number): Promise<Page<DestinationView>> {
  const after = cursor === undefined ? null : decodePositionCursor(cursor);
  const rows = await tx.destinations.list(spaceId, after, limit + 1);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { items: page.map(destinationView), nextCursor: rows.length > limit && last ? encodePositionCursor(last) : null };
}

/** Deletes it: the reply is its last view. Its delivery attempts stay in the audit. */
export async function deleteDestination(ctx: OpContext, id: string): Promise<DestinationView> {
  const d = await ctx.tx.destinations.get(ctx.spaceId, id);
  if (!d || !(await ctx.tx.destinations.delete(ctx.spaceId, id))) throw notFound('destination');
  return destinationView(d);
}

/** PAUSED to ACTIVE; the head event is tried again at once. An ACTIVE one is CONFLICT. */
export async function resumeDestination(ctx: OpContext, id: string, canConfigure: boolean): Promise<DestinationView> {
  if (!canConfigure) throw forbidden('credential lacks resource_config');
  const resumed = await ctx.tx.destinations.resume(ctx.spaceId, id, ctx.nowMs);
  if (resumed) return destinationView(resumed);
  if (!(await ctx.tx.destinations.get(ctx.spaceId, id))) throw notFound('destination');
  throw conflict('destination is not PAUSED');
}

const attemptCursor = (p: { attemptedAt: number; id: string }): string => encodePositionCursor({ createdAt: p.attemptedAt, id: p.id });

export async function listDeliveries(tx: Tx, spaceId: string, filter: AttemptFilter, cursor: string | undefined, limit: number): Promise<Page<DeliveryAttemptView>> {
  let before = null;
  if (cursor !== undefined) {
    const p = decodePositionCursor(cursor);
    before = { attemptedAt: p.createdAt, id: p.id };
  }
  const rows = await tx.deliveryAttempts.list(spaceId, filter, before, limit + 1);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { items: page.map(deliveryAttemptView), nextCursor: rows.length > limit && last ? attemptCursor(last) : null };
}
