import type { JournalEvent } from '@baton/core';
import { describe, expect, it } from 'vitest';
import { checkNoWorkAfterEnd } from './runs';

let position = 0;
const event = (type: string, aggregateId: string, scopeId: string | null, data: Record<string, unknown> = {}): JournalEvent =>
  ({ eventId: String(++position), spaceId: 's', occurredAt: position, type, aggregateType: type.split('.')[0]!, aggregateId, scopeId, data }) as JournalEvent;
const run = (scopeId: string, parentScopeId: string | null = null) => event('run.created', scopeId, scopeId, { parentScopeId });

describe('the check that an ended run takes no new work', () => {
  it('accepts work before the end, under other scopes, under a child run of a COMPLETED parent, and an admission reservation', () => {
    const journal = [
      run('r'),
      event('task.submitted', 't1', 'r'),
      run('c', 'r'),
      event('run.completed', 'r', 'r'),
      event('task.submitted', 't2', 'c'),
      event('claim.acquired', 'k1', 'elsewhere'),
      event('budget.reserved', 'b', 'r', { taskId: 't1', reservationId: 'x' }),
      event('timer.fired', 'tm', 'r'),
    ];
    expect(checkNoWorkAfterEnd(journal)).toEqual([]);
  });

  it('flags each kind of work created after the end, also under a gate scope of a group created under the run', () => {
    const journal = [
      run('r'),
      event('group.created', 'g', 'gate', { parentScopeId: 'r' }),
      event('run.cancelled', 'r', 'r'),
      event('task.submitted', 't', 'r'),
      event('claim.acquired', 'k', 'r'),
      event('timer.armed', 'tm', 'r'),
      event('budget.reserved', 'b', 'r', { reservationId: 'x' }),
      run('c', 'r'),
      event('group.created', 'g2', 'gate2', { parentScopeId: 'r' }),
      event('task.submitted', 'm', 'gate'),
    ];
    expect(checkNoWorkAfterEnd(journal)).toEqual(
      ['task.submitted t', 'claim.acquired k', 'timer.armed tm', 'budget.reserved x', 'run.created c', 'group.created g2', 'task.submitted m'].map((what) =>
        expect.stringContaining(`runs: ${what} (event`),
      ),
    );
    expect(checkNoWorkAfterEnd(journal)[0]).toMatch(/created under run r after it was CANCELLED \(event \d+\)/);
  });
});
