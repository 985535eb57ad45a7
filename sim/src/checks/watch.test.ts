import type { JournalEvent } from '@baton/core';
import { describe, expect, it } from 'vitest';
import { checkWatchFollower, matchesWatchFilter } from './watch';

const event = (eventId: string, type: string, aggregateType: string, aggregateId = 'a1'): JournalEvent => ({
  eventId,
  type,
  aggregateType,
  aggregateId,
  spaceId: 's',
  scopeId: null,
  data: {},
  occurredAt: 0,
});

const journal = [event('1', 'task.submitted', 'task'), event('2', 'message.sent', 'mailbox'), event('3', 'task.running', 'task', 't2'), event('4', 'budget.settled', 'budget')];
const seen = (...ids: string[]) => ids.map((id) => ({ eventId: id, type: journal.find((e) => e.eventId === id)!.type }));

describe('the watch oracle', () => {
  it('matches exact types, prefixes, aggregate types and type:id', () => {
    expect(journal.filter((e) => matchesWatchFilter(e, { types: 'task.*' })).map((e) => e.eventId)).toEqual(['1', '3']);
    expect(journal.filter((e) => matchesWatchFilter(e, { types: 'message.sent,budget.*' })).map((e) => e.eventId)).toEqual(['2', '4']);
    expect(journal.filter((e) => matchesWatchFilter(e, { aggregate: 'task:t2' })).map((e) => e.eventId)).toEqual(['3']);
    // `task.*` is a prefix with its dot: it does not match a type that merely starts with "task".
    expect(matchesWatchFilter(event('5', 'tasks.other', 'x'), { types: 'task.*' })).toBe(false);
  });

  it('passes a follower that saw every match in order, duplicates allowed', () => {
    expect(checkWatchFollower('w', journal, { types: 'task.*' }, seen('1', '1', '3'))).toEqual([]);
  });

  it('catches a skipped event, an event the filter does not match, and a reordering', () => {
    expect(checkWatchFollower('w', journal, { types: 'task.*' }, seen('1'))).toEqual([expect.stringContaining('never saw 1 matching events')]);
    expect(checkWatchFollower('w', journal, { types: 'task.*' }, seen('1', '2', '3'))).toEqual([expect.stringContaining('does not match')]);
    expect(checkWatchFollower('w', journal, { types: 'task.*' }, seen('3', '1'))).toEqual([expect.stringContaining('out of journal order')]);
  });
});
