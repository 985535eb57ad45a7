import type { CreatedPosition } from '../../paging';

/** Rows oldest first by (createdAt, id), after `after`, at most `limit`, copied: the memory store's version of a keyset page. */
export function pageByCreated<T extends CreatedPosition>(rows: Iterable<T>, after: CreatedPosition | null, limit: number): T[] {
  return [...rows]
    .filter((r) => after === null || r.createdAt > after.createdAt || (r.createdAt === after.createdAt && r.id > after.id))
    .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(0, limit)
    .map((r) => structuredClone(r));
}
