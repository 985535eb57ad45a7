import { assert } from '../assert';
import type { NewEvent } from './model';
import { eventTypes } from './model';

/**
 * What GET /watch filters on (docs/api.md, "Watch"). Every part given must match (AND); a part
 * left out matches everything. Parsed once per request; the scope subtree is resolved against
 * the store at each read (a group created under the scope while the watch waits joins it).
 */
export interface WatchFilter {
  /** Exact event types and `prefix.` prefixes (from `prefix.*`); null: every type. */
  types: { exact: ReadonlySet<string>; prefixes: readonly string[] } | null;
  /** The aggregate type, and its id when one aggregate is followed; null: every aggregate. */
  aggregate: { type: string; id: string | null } | null;
  /** The root of the scope subtree; null: every event, with a scope or not. */
  scopeId: string | null;
}

/** An event as the filter sees it: what the journal stores and NotifyingStore has before commit. */
export type WatchedEvent = Pick<NewEvent, 'type' | 'aggregateType' | 'aggregateId' | 'scopeId' | 'data'>;

const knownTypes: ReadonlySet<string> = new Set(Object.values(eventTypes));
const segment = '[a-z][a-z0-9_]*';
const typePattern = new RegExp(`^${segment}(\\.${segment})+$`);
const prefixPattern = new RegExp(`^${segment}(\\.${segment})*\\.\\*$`);
const aggregateTypePattern = new RegExp(`^${segment}$`);
/** An aggregate id: uuids in practice; anything printable without a separator or space. */
const aggregateIdPattern = /^[A-Za-z0-9_-]{1,100}$/;
/** More entries than types exist is a mistake, not a filter. */
export const maxWatchTypes = 64;

/** Why `types` is refused, or null when it parses (parseWatchTypes). */
export function watchTypesError(raw: string): string | null {
  const entries = raw.split(',').map((e) => e.trim());
  if (entries.length > maxWatchTypes) return `at most ${maxWatchTypes} entries`;
  for (const entry of entries) {
    if (entry === '') return 'an entry is empty: a comma list of event types, or prefix.* entries';
    // Well-formed types Baton does not emit are accepted and match nothing: a client may watch a
    // type a newer server version adds, during a rolling upgrade (isKnownWatchType tells them apart).
    if (!prefixPattern.test(entry) && !typePattern.test(entry)) return `${entry} is neither an event type (aggregate.verb) nor a prefix.* entry`;
  }
  return null;
}

/** Whether a `types` entry names, or as a prefix covers, a type this server emits. */
export function isKnownWatchType(entry: string): boolean {
  return entry.endsWith('.*') ? [...knownTypes].some((t) => t.startsWith(entry.slice(0, -1))) : knownTypes.has(entry);
}

export function parseWatchTypes(raw: string): NonNullable<WatchFilter['types']> {
  assert(watchTypesError(raw) === null, `unvalidated types ${raw}`);
  return eventTypeSet(raw.split(',').map((e) => e.trim()));
}

/**
 * Validated type entries (`task.succeeded`, `task.*`) as typeMatches takes them. GET /watch's `types` and a webhook destination's `eventTypes` share it.
 */
export function eventTypeSet(entries: readonly string[]): NonNullable<WatchFilter['types']> {
  const exact = new Set<string>();
  const prefixes: string[] = [];
  for (const entry of entries) {
    if (entry.endsWith('.*')) prefixes.push(entry.slice(0, -1));
    else exact.add(entry);
  }
  return { exact, prefixes };
}

/** Why `aggregate` is refused, or null when it parses (parseWatchAggregate). */
export function watchAggregateError(raw: string): string | null {
  const colon = raw.indexOf(':');
  const type = colon < 0 ? raw : raw.slice(0, colon);
  if (!aggregateTypePattern.test(type)) return 'must be an aggregate type (budget, mailbox, task, ...) or type:id';
  if (colon >= 0 && !aggregateIdPattern.test(raw.slice(colon + 1))) return 'the id after type: must be 1 to 100 letters, digits, - or _';
  return null;
}

export function parseWatchAggregate(raw: string): NonNullable<WatchFilter['aggregate']> {
  assert(watchAggregateError(raw) === null, `unvalidated aggregate ${raw}`);
  const colon = raw.indexOf(':');
  // Ids are stored lower case (uuids are normalised on input), so a pasted upper-case id still matches.
  return colon < 0 ? { type: raw, id: null } : { type: raw.slice(0, colon), id: raw.slice(colon + 1).toLowerCase() };
}

export function typeMatches(types: WatchFilter['types'], type: string): boolean {
  return types === null || types.exact.has(type) || types.prefixes.some((p) => type.startsWith(p));
}

/**
 * The scopes an event is about: its own scopeId, and every scope its payload names (a data field
 * `scopeId` or `...ScopeId`: a claim's claimScopeId, a subscriber's subscriberScopeId, a group's
 * parentScopeId). The watch rule of docs/api.md ("Watch"): events whose data names a scope in the subtree.
 */
export function scopesOf(event: Pick<WatchedEvent, 'scopeId' | 'data'>): string[] {
  const scopes = event.scopeId === null ? [] : [event.scopeId];
  for (const [key, value] of Object.entries(event.data)) {
    if ((key === 'scopeId' || key.endsWith('ScopeId')) && typeof value === 'string' && !scopes.includes(value)) scopes.push(value);
  }
  return scopes;
}

/**
 * Whether `event` passes `filter`, with the filter's scope subtree resolved to `subtree` (null
 * exactly when the filter has no scopeId). Scopes have no aggregate of their own here: a gate
 * scope's events are its group's, which carry the gate scope as scopeId; an aggregate of type
 * `scope` (none today) would match by its id.
 */
export function watchMatches(filter: WatchFilter, subtree: ReadonlySet<string> | null, event: WatchedEvent): boolean {
  assert((filter.scopeId === null) === (subtree === null), 'the scope subtree is resolved exactly when filtering by scope');
  if (!typeMatches(filter.types, event.type)) return false;
  if (filter.aggregate !== null) {
    if (event.aggregateType !== filter.aggregate.type) return false;
    if (filter.aggregate.id !== null && event.aggregateId !== filter.aggregate.id) return false;
  }
  if (subtree !== null) {
    const inSubtree = (event.aggregateType === 'scope' && subtree.has(event.aggregateId)) || scopesOf(event).some((s) => subtree.has(s));
    if (!inSubtree) return false;
  }
  return true;
}
