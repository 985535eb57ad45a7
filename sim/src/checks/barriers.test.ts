import type { JournalEvent } from '@baton/core';
import { describe, expect, it } from 'vitest';
import { BarrierLedger, replayBarriers } from './barriers';

/** The journal replay bites: each broken history is named, a sound one passes. */
let nextId = 0;
const event = (type: string, data: Record<string, unknown> = {}): JournalEvent => ({
  eventId: String(++nextId),
  spaceId: 's',
  type: `barrier.${type}`,
  aggregateType: 'barrier',
  aggregateId: 'b1',
  scopeId: null,
  data,
  occurredAt: 0,
});
const created = (target: number) => event('created', { target, epoch: 1 });
const arrived = (arrivalKey: string, arrivals: number, epoch = 1) => event('arrived', { epoch, arrivalKey, arrivals, target: 2 });

function problemsOf(journal: JournalEvent[]): string[] {
  const problems: string[] = [];
  replayBarriers(journal, problems);
  return problems;
}

describe('barrier journal replay', () => {
  it('passes a sound history across epochs', () => {
    const journal = [created(2), arrived('a', 1), arrived('b', 2), event('released'), event('epoch_advanced', { epoch: 2 }), arrived('a', 1, 2), event('cancelled'), event('epoch_advanced', { epoch: 3 })];
    expect(problemsOf(journal)).toEqual([]);
    expect(replayBarriers(journal, []).get('b1')).toMatchObject({ epoch: 3, state: 'WAITING' });
  });

  it('names a key counted twice, a release too early, a release missing, and moves the state table forbids', () => {
    expect(problemsOf([created(3), arrived('a', 1), arrived('a', 2)])).toContainEqual(expect.stringContaining('arrivalKey a counted twice'));
    expect(problemsOf([created(2), arrived('a', 1), event('released')])).toContainEqual(expect.stringContaining('released with 1 of 2'));
    expect(problemsOf([created(2), arrived('a', 1), arrived('b', 2)])).toContainEqual(expect.stringContaining('never released'));
    expect(problemsOf([created(2), arrived('a', 1), arrived('b', 2), arrived('c', 3)])).toContainEqual(expect.stringContaining('release of its full epoch was due'));
    expect(problemsOf([created(2), event('epoch_advanced', { epoch: 2 })])).toContainEqual(expect.stringContaining('while WAITING'));
  });
});

describe('barrier ledger', () => {
  it('names a second "counted" reply for one key in one epoch, and an inconsistent view', () => {
    const problems: string[] = [];
    const ledger = new BarrierLedger((m) => problems.push(m));
    const view = { id: 'b1', state: 'WAITING', epoch: 1, target: 3, arrivals: 1, replay: false };
    ledger.arrived('b1', 'a', view, 'x:0');
    ledger.arrived('b1', 'a', { ...view, replay: true }, 'y:0');
    expect(problems).toEqual([]);
    ledger.arrived('b1', 'a', { ...view, arrivals: 2 }, 'y:0');
    ledger.viewed('b1', { ...view, state: 'RELEASED' });
    expect(problems).toEqual([expect.stringContaining('counted twice'), expect.stringContaining('RELEASED with 1 of 3')]);
  });
});
