import type { EventView } from '../schemas/events';
import { plantedBugs } from '../planted-bugs';
import type { Tx } from '../store/store';
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
 * One page of a space's journal after `cursor`. The next cursor is the last eventId returned,
 * or the given cursor when nothing new is visible yet: the reader polls again with it.
 */
export async function readEvents(tx: Tx, spaceId: string, cursor: string | undefined, limit: number): Promise<{ items: EventView[]; nextCursor: string }> {
  const after = cursor ?? '0';
  const listed = await tx.events.listAfter(spaceId, after, limit);
  const events = plantedBugs.has('journal-drops-event') ? listed.filter((_e, i) => i !== 1) : listed;
  return { items: events.map(eventView), nextCursor: listed.at(-1)?.eventId ?? after };
}
