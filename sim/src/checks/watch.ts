import type { JournalEvent } from '@baton/core';
import type { SeenEvent } from '../agents/watcher';
import type { WatchFilter } from '../agents/watch-follower';

/**
 * The oracle of a watch filter, written apart from the server's (core's watch filter) so that a
 * wrong filter there shows up as a difference here: the rules of docs/design/0013-events-and-watch.md, nothing more.
 */
export function matchesWatchFilter(e: Pick<JournalEvent, 'type' | 'aggregateType' | 'aggregateId'>, filter: WatchFilter): boolean {
  if (filter.types !== undefined) {
    const wanted = filter.types.split(',');
    const typeOk = wanted.some((t) => (t.endsWith('.*') ? e.type.startsWith(t.slice(0, -1)) : e.type === t));
    if (!typeOk) return false;
  }
  if (filter.aggregate !== undefined) {
    const [type, id] = filter.aggregate.split(':', 2);
    if (e.aggregateType !== type || (id !== undefined && e.aggregateId !== id)) return false;
  }
  return true;
}

/**
 * A watcher that followed its cursor to the end saw every committed event its filter matches,
 * in journal order, and none that it does not match (duplicates, which at-least-once allows,
 * removed by eventId first).
 */
export function checkWatchFollower(name: string, journal: readonly JournalEvent[], filter: WatchFilter, watched: readonly SeenEvent[]): string[] {
  const problems: string[] = [];
  const unique = firstSightings(watched.map((e) => e.eventId));
  const seen = new Set(unique);
  const expected = journal.filter((e) => matchesWatchFilter(e, filter)).map((e) => e.eventId);
  const expectedSet = new Set(expected);
  const missing = expected.filter((id) => !seen.has(id));
  const label = `${name} (${JSON.stringify(filter)})`;
  if (missing.length > 0) problems.push(`${label} never saw ${missing.length} matching events (first ${missing[0]})`);
  const extra = unique.filter((id) => !expectedSet.has(id));
  if (extra.length > 0) problems.push(`${label} saw ${extra.length} events its filter does not match or the journal does not hold (first ${extra[0]})`);
  if (unique.filter((id) => expectedSet.has(id)).join() !== expected.filter((id) => seen.has(id)).join()) problems.push(`${label} saw events out of journal order`);
  return problems;
}

/** Each id once, where it was first seen: what an at-least-once reader is left with after removing duplicates. */
export function firstSightings(ids: readonly string[]): string[] {
  return [...new Set(ids)];
}
