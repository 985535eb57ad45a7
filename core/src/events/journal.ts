import type { EventView } from '../schemas/events';
import type { Tx } from '../store/store';
import { together } from '../store/together';
import { isoFromMs } from '../time';
import type { JournalEvent } from './model';

export function eventView(e: JournalEvent): EventView {
  return {
    eventId: e.eventId,
    type: e.type,
    aggregate: { type: e.aggregateType, id: e.aggregateId },
    scopeId: e.scopeId,
    occurredAt: isoFromMs(e.occurredAt),
    data: e.data,
  };
}

/**
 * Whether retention deleted events after `cursor` that a read from it would have returned
 * (docs/design/0017-retention.md: a cursor older than the journal's start answers from the oldest retained
 * event, with `truncated: true`). `firstListed` is the first event that read found, if any.
 * No cursor asks for the journal from its start, which is never truncated.
 *
 * Called after the read, not before: purgedThrough is read later than the journal was, so a
 * purge that committed in between is seen. A page whose first event lies at or before
 * purgedThrough was read before that purge and lost nothing; one whose first event lies after it,
 * or that is empty, was read after it, so the events between the cursor and it are gone.
 */
export function lostToRetention(cursor: string | undefined, purgedThrough: string, firstListed: string | undefined): boolean {
  if (cursor === undefined) return false;
  return BigInt(purgedThrough) > BigInt(cursor) && (firstListed === undefined || BigInt(firstListed) > BigInt(purgedThrough));
}

/**
 * Events after `after`, and how far retention has purged the space's journal when a cursor was
 * given ('0' otherwise). Sent together, they cost one round trip, and PostgreSQL runs them in
 * this order, so the purge point is read after the page, as lostToRetention needs.
 */
export async function listWithPurgePoint(tx: Tx, spaceId: string, after: string, limit: number, cursor: string | undefined): Promise<{ listed: JournalEvent[]; purgedThrough: string }> {
  const [listed, purgedThrough] = await together(tx.events.listAfter(spaceId, after, limit), cursor === undefined ? Promise.resolve('0') : tx.events.purgedThrough(spaceId));
  return { listed, purgedThrough };
}

export interface EventPage {
  items: EventView[];
  nextCursor: string;
  /** Present, and true, only on a page after a cursor older than the journal's start (lostToRetention). */
  truncated?: true;
}

/**
 * One page of a space's journal after `cursor`. The next cursor is the last eventId returned,
 * or the given cursor when nothing new is visible yet: the reader polls again with it.
 */
export async function readEvents(tx: Tx, spaceId: string, cursor: string | undefined, limit: number): Promise<EventPage> {
  const after = cursor ?? '0';
  const { listed, purgedThrough } = await listWithPurgePoint(tx, spaceId, after, limit, cursor);
  const page: EventPage = { items: listed.map(eventView), nextCursor: listed.at(-1)?.eventId ?? after };
  if (lostToRetention(cursor, purgedThrough, listed[0]?.eventId)) page.truncated = true;
  return page;
}
