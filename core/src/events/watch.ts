import type { EventView } from '../schemas/events';
import type { Tx } from '../store/store';
import { eventView, listWithPurgePoint, lostToRetention } from './journal';
import { watchMatches, type WatchFilter } from './watch-filter';

/** Journal events one read examines at most, matching or not: bounds the work of a request whose filter matches little. */
export const maxWatchExamined = 5_000;
/** Events fetched per statement while examining. */
const examineBatch = 500;

export interface WatchPage {
  /** The matching events, at most `limit`, in journal order. */
  items: EventView[];
  /**
   * The position of the last event examined, matching or not (the cursor given when nothing new
   * is visible): a watch whose filter matches nothing still moves on and never rescans.
   */
  nextCursor: string;
  /** The scope subtree the read filtered with (null without a scopeId filter): what the watch parks on. */
  subtree: ReadonlySet<string> | null;
  /** Retention deleted events after `cursor` before this read (journal.ts, lostToRetention). */
  truncated: boolean;
}

/**
 * One page of GET /watch: the journal after `cursor` (as readEvents, so it skips nothing), filtered,
 * stopping at `limit` matches, at the journal's visible end, or after maxWatchExamined events.
 */
export async function readWatchPage(tx: Tx, spaceId: string, cursor: string | undefined, filter: WatchFilter, limit: number): Promise<WatchPage> {
  const subtree = filter.scopeId === null ? null : new Set(await tx.taskGroups.scopeSubtree(spaceId, filter.scopeId));
  const items: EventView[] = [];
  let after = cursor ?? '0';
  let examined = 0;
  let truncated: boolean | undefined;
  while (examined < maxWatchExamined) {
    const batch = Math.min(examineBatch, maxWatchExamined - examined);
    // Judged on the first batch, the one read from the caller's cursor; later ones follow it.
    const first = truncated === undefined;
    const { listed, purgedThrough } = await listWithPurgePoint(tx, spaceId, after, batch, first ? cursor : undefined);
    if (first) truncated = lostToRetention(cursor, purgedThrough, listed[0]?.eventId);
    for (const event of listed) {
      examined++;
      after = event.eventId;
      if (!watchMatches(filter, subtree, event)) continue;
      items.push(eventView(event));
      if (items.length === limit) return { items, nextCursor: after, subtree, truncated: truncated ?? false };
    }
    if (listed.length < batch) break;
  }
  return { items, nextCursor: after, subtree, truncated: truncated ?? false };
}
