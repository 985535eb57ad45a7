import type { JournalEvent, NewEvent } from './model';
import type { SpaceCutoff } from '../store/retention-repository';

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
  /**
   * Retention (docs/design/0017-retention.md): deletes up to `limit` events of the given spaces that occurred at
   * or before their space's cutoff, from the start of each space's journal, and raises each
   * space's purgedThrough to the newest position deleted. Says how many. Rows another transaction
   * holds are skipped (SKIP LOCKED).
   */
  purgeBefore(cutoffs: readonly SpaceCutoff[], limit: number): Promise<number>;
  /**
   * The position of the newest event retention deleted from the space ('0' when none): a cursor
   * before it may have lost events, and its page says truncated (events/journal.ts).
   */
  purgedThrough(spaceId: string): Promise<string>;
}
