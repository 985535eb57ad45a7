/**
 * Whether a destination's eventTypes take an event type: [] takes all, `task.*` takes every
 * type under `task.`. Kept here for now; GET /watch has its own filter (to be unified).
 */
export function matchesEventTypes(patterns: readonly string[], type: string): boolean {
  if (patterns.length === 0) return true;
  return patterns.some((p) => (p.endsWith('.*') ? type.startsWith(p.slice(0, -1)) : p === type));
}
