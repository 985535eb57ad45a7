import type { JournalEvent, NewEvent } from './model';

export interface EventRepository {
  append(spaceId: string, occurredAt: number, events: NewEvent[]): Promise<void>;
  /**
   * Events after `afterEventId` in eventId order. Never returns an event while an event with a
   * smaller eventId may still commit: a reader that follows the last eventId skips nothing.
   */
  listAfter(spaceId: string, afterEventId: string, limit: number): Promise<JournalEvent[]>;
}
