import type { JournalEvent, NewEvent } from './model';

export interface EventRepository {
  append(spaceId: string, occurredAt: number, events: NewEvent[]): Promise<void>;
  /**
   * Events after `afterEventId` in eventId order. Never returns an event while an event with a
   * smaller eventId may still commit: a reader that follows the last eventId skips nothing.
   */
  listAfter(spaceId: string, afterEventId: string, limit: number): Promise<JournalEvent[]>;
  /**
   * The position of the last event a reader can see now ('0' when none): a reader that follows
   * listAfter from it misses nothing committed later (a webhook destination starts here).
   */
  tail(spaceId: string): Promise<string>;
}
