import { describe, expect, it } from 'vitest';
import { InvariantViolation } from '../assert';
import { BatonError } from '../errors';
import { childLimitBounds, type Run } from './model';
import { addChild, assertRun, endRun } from './rules';

const run: Run = {
  spaceId: 's', scopeId: 'r1', parentScopeId: null, name: null, state: 'ACTIVE', childLimit: 3, children: 1,
  cascadePending: false, createdAt: 1, updatedAt: 1, endedAt: null,
};
const ended = (state: 'COMPLETED' | 'CANCELLED'): Run => ({ ...run, state, endedAt: 5, updatedAt: 5 });
const conflictOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (error) {
    return error instanceof BatonError ? error.code : 'not a BatonError';
  }
  return undefined;
};

describe('run rules', () => {
  it('ends an ACTIVE run once, stamping endedAt and updatedAt; a cancel leaves its cascade pending, a complete does not', () => {
    expect(endRun(run, 'COMPLETED', 9)).toEqual({ next: { ...run, state: 'COMPLETED', endedAt: 9, updatedAt: 9, cascadePending: false }, changed: true });
    expect(endRun(run, 'CANCELLED', 9)).toEqual({ next: { ...run, state: 'CANCELLED', endedAt: 9, updatedAt: 9, cascadePending: true }, changed: true });
  });

  it('takes the same end again as a no-op that changes nothing', () => {
    const completed = ended('COMPLETED');
    const again = endRun(completed, 'COMPLETED', 20);
    expect(again.changed).toBe(false);
    expect(again.next).toBe(completed);
  });

  it('refuses the other end of an ended run as CONFLICT', () => {
    expect(conflictOf(() => endRun(ended('COMPLETED'), 'CANCELLED', 20))).toBe('CONFLICT');
    expect(conflictOf(() => endRun(ended('CANCELLED'), 'COMPLETED', 20))).toBe('CONFLICT');
    expect(() => endRun(ended('COMPLETED'), 'CANCELLED', 20)).toThrowError('run r1 is COMPLETED');
  });

  it('adds children up to the childLimit exactly, stamping updatedAt', () => {
    expect(addChild(run, 9)).toEqual({ ...run, children: 2, updatedAt: 9 });
    expect(addChild({ ...run, children: 2 }, 9).children).toBe(3);
    expect(conflictOf(() => addChild({ ...run, children: 3 }, 9))).toBe('CONFLICT');
  });

  it('refuses a child under a parent that ended', () => {
    expect(conflictOf(() => addChild(ended('COMPLETED'), 9))).toBe('CONFLICT');
    expect(conflictOf(() => addChild(ended('CANCELLED'), 9))).toBe('CONFLICT');
    expect(() => addChild(ended('CANCELLED'), 9)).toThrowError('parent run r1 is CANCELLED');
    expect(() => addChild({ ...run, children: 3 }, 9)).toThrowError('parent run r1 has its childLimit of 3 children');
  });

  it('holds a stored run to its invariants and passes the runs that keep them', () => {
    for (const ok of [run, { ...run, children: 0 }, { ...run, children: 3 }, { ...run, childLimit: childLimitBounds.min, children: 1 }, { ...run, childLimit: childLimitBounds.max }, ended('COMPLETED'), { ...ended('CANCELLED'), cascadePending: true }, { ...run, parentScopeId: 'r0' }]) {
      expect(() => assertRun(ok)).not.toThrow();
    }
    const broken: Run[] = [
      { ...run, childLimit: childLimitBounds.min - 1, children: 0 },
      { ...run, childLimit: childLimitBounds.max + 1 },
      { ...run, children: -1 },
      { ...run, children: 4 },
      { ...run, endedAt: 5 },
      { ...run, state: 'COMPLETED' },
      { ...run, cascadePending: true },
      { ...ended('COMPLETED'), cascadePending: true },
      { ...run, parentScopeId: run.scopeId },
    ];
    for (const bad of broken) expect(() => assertRun(bad), JSON.stringify(bad)).toThrow(InvariantViolation);
  });
});
