import { topicOf } from '../notifier';
import { scopesOf, type WatchedEvent, type WatchFilter } from './watch-filter';

/**
 * Notifier topics for GET /watch (docs/api.md, "Watch"; docs/benchmarks.md, "Idle watchers").
 * A commit publishes, per event, a topic for each thing a watch can filter on: its space, its
 * type and the type's prefixes, its aggregate type, its aggregate (topicOf, already published for
 * the other long polls) and every scope it is about. A watch parks on the topics of one part of
 * its filter only: every event it can match is published there (the parts are ANDed), and an
 * event published there that the other parts refuse costs one read, not one per commit. So a
 * watch whose filter matches nothing a busy space does never wakes.
 *
 * The invariant (a property test holds it): watchMatches(filter, subtree, e) implies
 * watchTopicsOf(filter, subtree) and eventWatchTopics(e) share a topic.
 */
/** Published by every commit that journals an event in the space (the webhook dispatcher wakes on it too). */
export const spaceTopic = (spaceId: string): string => `watch:${spaceId}`;
const typeTopic = (spaceId: string, typeOrPrefix: string): string => `watch:${spaceId}:type:${typeOrPrefix}`;
const aggregateTypeTopic = (spaceId: string, aggregateType: string): string => `watch:${spaceId}:aggregate:${aggregateType}`;
const scopeTopic = (spaceId: string, scopeId: string): string => `watch:${spaceId}:scope:${scopeId}`;

/** What a committed event publishes for watches, besides its aggregate topic (NotifyingStore adds that for every event). */
export function eventWatchTopics(spaceId: string, event: WatchedEvent): string[] {
  const topics = [...kindTopics(spaceId, event.type, event.aggregateType)];
  for (const scope of scopesOf(event)) topics.push(scopeTopic(spaceId, scope));
  if (event.aggregateType === 'scope') topics.push(scopeTopic(spaceId, event.aggregateId));
  return topics;
}

/**
 * The topics an event publishes by its space, type and aggregate type alone, built once per
 * such triple and kept (space → type → aggregate type): a batch of 100 jobs journals 600 events
 * of four types, and building these strings again for each event, and hashing them into the
 * commit's topic set, was 3.7 % of the server's CPU in a batched drain (docs/benchmarks.md,
 * "Where the server's CPU goes"). The whole cache is dropped when it holds maxKindSpaces spaces,
 * which bounds it whatever the number of spaces.
 */
const kindTopicsBySpace = new Map<string, Map<string, Map<string, readonly string[]>>>();
export const maxKindSpaces = 1_000;

function kindTopics(spaceId: string, type: string, aggregateType: string): readonly string[] {
  let byType = kindTopicsBySpace.get(spaceId);
  if (byType === undefined) {
    if (kindTopicsBySpace.size >= maxKindSpaces) kindTopicsBySpace.clear();
    byType = new Map();
    kindTopicsBySpace.set(spaceId, byType);
  }
  let byAggregateType = byType.get(type);
  if (byAggregateType === undefined) {
    byAggregateType = new Map();
    byType.set(type, byAggregateType);
  }
  let topics = byAggregateType.get(aggregateType);
  if (topics === undefined) {
    const built = [spaceTopic(spaceId), typeTopic(spaceId, type), aggregateTypeTopic(spaceId, aggregateType)];
    // `a.b.c` publishes `a.*` and `a.b.*`, the prefixes a watch can name.
    for (let dot = type.indexOf('.'); dot >= 0; dot = type.indexOf('.', dot + 1)) built.push(typeTopic(spaceId, `${type.slice(0, dot + 1)}*`));
    topics = built;
    byAggregateType.set(aggregateType, topics);
  }
  return topics;
}

/** How many spaces the kind-topic cache holds (tests: it stays bounded). */
export const kindTopicSpaces = (): number => kindTopicsBySpace.size;

/**
 * The topics a watch parks on: those of the most selective part of its filter. One aggregate
 * first, then the scope subtree (re-resolved at each read, so it grows with groups created below;
 * a group.created below the scope names it as parentScopeId and so wakes the watch to re-arm),
 * then the types, then the aggregate type, and the whole space for a watch without a filter.
 */
export function watchTopicsOf(spaceId: string, filter: WatchFilter, subtree: ReadonlySet<string> | null): string[] {
  if (filter.aggregate?.id != null) return [topicOf(filter.aggregate.type, filter.aggregate.id)];
  if (subtree !== null) return [...subtree].map((scope) => scopeTopic(spaceId, scope));
  if (filter.types !== null) return [...[...filter.types.exact].map((t) => typeTopic(spaceId, t)), ...filter.types.prefixes.map((p) => typeTopic(spaceId, `${p}*`))];
  if (filter.aggregate !== null) return [aggregateTypeTopic(spaceId, filter.aggregate.type)];
  return [spaceTopic(spaceId)];
}
