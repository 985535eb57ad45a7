import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { eventTypes } from './model';
import { isKnownWatchType, parseWatchAggregate, parseWatchTypes, scopesOf, watchAggregateError, watchMatches, watchTypesError, type WatchedEvent, type WatchFilter } from './watch-filter';
import { eventWatchTopics, kindTopicSpaces, maxKindSpaces, watchTopicsOf } from './watch-topics';

const spaceId = '00000000-0000-4000-8000-000000000001';
const types = Object.values(eventTypes);
const scopes = ['s1', 's2', 's3', 's4', 's5'];
const aggregateTypes = [...new Set(types.map((t) => t.split('.')[0]!)), 'scope'];

const eventArb: fc.Arbitrary<WatchedEvent> = fc.record({
  type: fc.constantFrom(...types),
  aggregateType: fc.constantFrom(...aggregateTypes),
  aggregateId: fc.constantFrom('a1', 'a2', 's1', 's4'),
  scopeId: fc.option(fc.constantFrom(...scopes), { nil: null }),
  data: fc.dictionary(fc.constantFrom('claimScopeId', 'parentScopeId', 'scopeId', 'taskId', 'scopes'), fc.constantFrom(...scopes)),
});
const prefixArb = fc.constantFrom(...types).chain((t) => fc.constantFrom(`${t.split('.')[0]}.*`));
const filterArb: fc.Arbitrary<WatchFilter> = fc.record({
  types: fc.option(fc.array(fc.oneof(fc.constantFrom(...types), prefixArb), { minLength: 1, maxLength: 4 }).map((e) => parseWatchTypes(e.join(','))), { nil: null }),
  aggregate: fc.option(fc.record({ type: fc.constantFrom(...aggregateTypes), id: fc.option(fc.constantFrom('a1', 'a2', 's1'), { nil: null }) }), { nil: null }),
  scopeId: fc.option(fc.constantFrom(...scopes), { nil: null }),
});
/** A scope forest: s1 > s2 > s3, s4 alone, s5 alone. */
const parents: Record<string, string | null> = { s1: null, s2: 's1', s3: 's2', s4: null, s5: null };
const subtreeOf = (root: string): Set<string> => new Set(scopes.filter((s) => { for (let at: string | null = s; at !== null; at = parents[at]!) if (at === root) return true; return false; }));

describe('watch filter', () => {
  it('parses types and prefixes, refusing what names no event type', () => {
    expect(parseWatchTypes('task.*, message.acked')).toEqual({ exact: new Set(['message.acked']), prefixes: ['task.'] });
    expect(watchTypesError('task.*,message.acked')).toBeNull();
    // Well-formed but not emitted: accepted (a newer server may emit it), matching nothing.
    expect(watchTypesError('task.nope')).toBeNull();
    expect(watchTypesError('nope.*')).toBeNull();
    expect([isKnownWatchType('task.nope'), isKnownWatchType('nope.*'), isKnownWatchType('task.*'), isKnownWatchType('task.running')]).toEqual([false, false, true, true]);
    expect(watchTypesError('Task.running')).toMatch(/neither/);
    expect(watchTypesError('task')).toMatch(/neither/);
    expect(watchTypesError('task.*,')).toMatch(/empty/);
    expect(watchTypesError('*')).toMatch(/neither/);
  });

  it('parses aggregate type and type:id', () => {
    expect(parseWatchAggregate('mailbox')).toEqual({ type: 'mailbox', id: null });
    expect(parseWatchAggregate('task:ABC-1')).toEqual({ type: 'task', id: 'abc-1' });
    expect(watchAggregateError('Task')).not.toBeNull();
    expect(watchAggregateError('task:')).not.toBeNull();
    expect(watchAggregateError('task:a b')).not.toBeNull();
  });

  it('a prefix.* entry matches exactly the types starting with prefix.', () => {
    fc.assert(fc.property(fc.constantFrom(...types), fc.constantFrom(...types), (named, type) => {
      const prefix = named.split('.')[0]!;
      const filter: WatchFilter = { types: parseWatchTypes(`${prefix}.*`), aggregate: null, scopeId: null };
      const event: WatchedEvent = { type, aggregateType: 'x', aggregateId: 'a1', scopeId: null, data: {} };
      expect(watchMatches(filter, null, event)).toBe(type.startsWith(`${prefix}.`));
    }));
  });

  it('a scopeId matches events whose scope or payload scope lies in its subtree, and nothing else', () => {
    fc.assert(fc.property(fc.constantFrom(...scopes), eventArb, (root, event) => {
      const subtree = subtreeOf(root);
      const filter: WatchFilter = { types: null, aggregate: null, scopeId: root };
      const about = [event.scopeId, ...Object.entries(event.data).filter(([k]) => k === 'scopeId' || k.endsWith('ScopeId')).map(([, v]) => v)];
      const expected = about.some((s) => typeof s === 'string' && subtree.has(s)) || (event.aggregateType === 'scope' && subtree.has(event.aggregateId));
      expect(watchMatches(filter, subtree, event)).toBe(expected);
    }));
  });

  it('scopesOf reads scopeId and ...ScopeId fields only', () => {
    expect(scopesOf({ scopeId: 's1', data: { claimScopeId: 's2', scopes: 's3', subscriberScopeId: 's1' } })).toEqual(['s1', 's2']);
  });

  it('every event a filter matches is published on a topic that filter parks on', () => {
    fc.assert(fc.property(filterArb, eventArb, (filter, event) => {
      const subtree = filter.scopeId === null ? null : subtreeOf(filter.scopeId);
      fc.pre(watchMatches(filter, subtree, event));
      const published = new Set([`${event.aggregateType}:${event.aggregateId}`, ...eventWatchTopics(spaceId, event)]);
      expect(watchTopicsOf(spaceId, filter, subtree).some((t) => published.has(t))).toBe(true);
    }), { numRuns: 2000 });
  });

  it('publishes the same topics for an event however many spaces came before it, and keeps at most maxKindSpaces spaces of them', () => {
    const event = { type: 'task.running', aggregateType: 'task', aggregateId: 't', scopeId: 's1', data: { claimScopeId: 's2' } };
    const first = eventWatchTopics('space-0', event);
    expect(first).toEqual(['watch:space-0', 'watch:space-0:type:task.running', 'watch:space-0:aggregate:task', 'watch:space-0:type:task.*', 'watch:space-0:scope:s1', 'watch:space-0:scope:s2']);
    for (let i = 1; i <= maxKindSpaces + 5; i++) eventWatchTopics(`space-${i}`, event);
    expect(kindTopicSpaces()).toBeLessThanOrEqual(maxKindSpaces);
    expect(eventWatchTopics('space-0', event)).toEqual(first);
    // The array answered is the caller's own: changing it changes no later answer.
    eventWatchTopics('space-0', event).push('watch:space-0:scope:other');
    expect(eventWatchTopics('space-0', event)).toEqual(first);
  });

  it('a watch on types does not park where other types publish', () => {
    const filter: WatchFilter = { types: parseWatchTypes('group.decided'), aggregate: null, scopeId: null };
    const published = eventWatchTopics(spaceId, { type: 'message.sent', aggregateType: 'mailbox', aggregateId: 'm', scopeId: 's1', data: {} });
    expect(watchTopicsOf(spaceId, filter, null).filter((t) => published.includes(t))).toEqual([]);
  });
});
