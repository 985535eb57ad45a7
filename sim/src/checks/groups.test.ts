import type { JournalEvent } from '@baton/core';
import { describe, expect, it } from 'vitest';
import { GroupLedger, replayGroups, ruleSays } from './groups';

/** The task-group journal replay bites: each broken history is named, a sound one passes. */
let nextId = 0;
const at = (occurredAt: number, type: string, aggregateType: string, aggregateId: string, data: Record<string, unknown>): JournalEvent => ({
  eventId: String(++nextId), spaceId: 's', type, aggregateType, aggregateId, scopeId: 'gate', data, occurredAt,
});
const created = (g: string, condition: string, threshold: number | null, expectedMembers: number | null = null, deadline: number | null = null) =>
  at(0, 'group.created', 'group', g, { groupId: g, condition, threshold, expectedMembers, deadline: deadline === null ? null : new Date(deadline).toISOString(), parentScopeId: 'workers' });
const added = (g: string, t: string, position: number, taskState = 'PENDING', time = 100) => at(time, 'group.member_added', 'group', g, { groupId: g, taskId: t, position, how: 'CREATED', taskState });
const task = (t: string, type: string, time = 200) => at(time, `task.${type}`, 'task', t, { taskId: t });
const verdict = (g: string, t: string, v: string, time = 300) => at(time, 'group.verdict', 'group', g, { groupId: g, taskId: t, verdict: v });
const sealed = (g: string, cause: string, members: number, time = 400) => at(time, 'group.sealed', 'group', g, { groupId: g, cause, members });
const decided = (g: string, outcome: string, outcomeReason: string, counts: { from?: string; members: number; accepted?: number; rejected?: number; terminal?: number; succeeded?: number }, time = 500) =>
  at(time, 'group.decided', 'group', g, { groupId: g, outcome, outcomeReason, from: counts.from ?? 'OPEN', members: counts.members, accepted: counts.accepted ?? 0, rejected: counts.rejected ?? 0, terminal: counts.terminal ?? 0, succeeded: counts.succeeded ?? 0 });

function problemsOf(journal: JournalEvent[]): string[] {
  const problems: string[] = [];
  replayGroups(journal, problems);
  return problems;
}

/** A FIRST_ACCEPTED group of two whose first member succeeds and is accepted: it decides then, the other member is cancelled. */
const sound = (): JournalEvent[] => [
  created('g', 'FIRST_ACCEPTED', 1),
  task('t1', 'submitted', 100), added('g', 't1', 1),
  task('t2', 'submitted', 100), added('g', 't2', 2),
  task('t1', 'running'), task('t1', 'succeeded', 250),
  verdict('g', 't1', 'ACCEPTED'),
  decided('g', 'SUCCEEDED', 'THRESHOLD_MET', { members: 2, accepted: 1, terminal: 1, succeeded: 1 }, 300),
  task('t2', 'cancelled', 300),
];

describe('task group journal replay', () => {
  it('passes sound histories: a threshold met, all terminal after a close, unreachable, a deadline', () => {
    expect(problemsOf(sound())).toEqual([]);
    const allTerminal = [created('a', 'ALL_TERMINAL', null), task('u1', 'submitted'), added('a', 'u1', 1), task('u1', 'failed', 250), sealed('a', 'CLOSE', 1), decided('a', 'SUCCEEDED', 'ALL_TERMINAL', { from: 'SEALED', members: 1, terminal: 1 }, 400)];
    expect(problemsOf(allTerminal)).toEqual([]);
    // Two needed of two: an outside task that already failed joins last, which makes the threshold unreachable; the join seals membership first.
    const unreachable = [created('n', 'N_ACCEPTED', 2, 2), task('v1', 'submitted'), added('n', 'v1', 1), task('v2', 'failed', 250), added('n', 'v2', 2, 'FAILED', 260), sealed('n', 'EXPECTED_MEMBERS', 2, 260), decided('n', 'FAILED', 'THRESHOLD_UNREACHABLE', { from: 'SEALED', members: 2, terminal: 1 }, 260), task('v1', 'cancelled', 260)];
    expect(problemsOf(unreachable)).toEqual([]);
    expect(problemsOf([created('d', 'ALL_TERMINAL', null, null, 1_000), decided('d', 'FAILED', 'DEADLINE_EXCEEDED', { members: 0 }, 1_000)])).toEqual([]);
  });

  it('names a second decision (the planted group-decides-twice)', () => {
    const late = [...sound(), verdict('g', 't2', 'REJECTED', 600), decided('g', 'SUCCEEDED', 'THRESHOLD_MET', { from: 'DECIDED', members: 2, accepted: 1, rejected: 1, terminal: 2, succeeded: 1 }, 600)];
    expect(problemsOf(late)).toContainEqual(expect.stringContaining('decided twice'));
  });

  it('names an outcome the verdicts and member states at that moment do not support', () => {
    // THRESHOLD_MET with one of two accepted.
    const early = [created('g', 'N_ACCEPTED', 2), task('t1', 'succeeded'), added('g', 't1', 1, 'SUCCEEDED', 250), verdict('g', 't1', 'ACCEPTED'), decided('g', 'SUCCEEDED', 'THRESHOLD_MET', { members: 1, accepted: 1, terminal: 1, succeeded: 1 }, 300)];
    expect(problemsOf(early)).toContainEqual(expect.stringContaining('but the rule says undecided'));
    // THRESHOLD_UNREACHABLE while a member still runs and membership is closed: one could still be accepted.
    const hasty = [created('g', 'FIRST_ACCEPTED', 1), task('t1', 'submitted'), added('g', 't1', 1), task('t1', 'running'), sealed('g', 'CLOSE', 1), decided('g', 'FAILED', 'THRESHOLD_UNREACHABLE', { from: 'SEALED', members: 1 }, 400)];
    expect(problemsOf(hasty)).toContainEqual(expect.stringContaining('but the rule says undecided'));
    // ALL_TERMINAL before membership closed.
    const open = [created('g', 'ALL_TERMINAL', null), task('t1', 'submitted'), added('g', 't1', 1), task('t1', 'succeeded'), decided('g', 'SUCCEEDED', 'ALL_TERMINAL', { members: 1, terminal: 1, succeeded: 1 }, 300)];
    expect(problemsOf(open)).toContainEqual(expect.stringContaining('but the rule says undecided'));
    // DEADLINE_EXCEEDED before the deadline; a decision of another kind after it.
    expect(problemsOf([created('g', 'ALL_TERMINAL', null, null, 1_000), decided('g', 'FAILED', 'DEADLINE_EXCEEDED', { members: 0 }, 999)])).toContainEqual(expect.stringContaining('DEADLINE_EXCEEDED at'));
    const late = [created('g', 'ALL_TERMINAL', null, null, 100), sealed('g', 'CLOSE', 0, 150), decided('g', 'SUCCEEDED', 'ALL_TERMINAL', { from: 'SEALED', members: 0 }, 150)];
    expect(problemsOf(late)).toContainEqual(expect.stringContaining('the deadline decides first'));
    // Counts in the event that disagree with the journal.
    const counted = sound().map((e) => (e.type === 'group.decided' ? { ...e, data: { ...e.data, accepted: 2 } } : e));
    expect(problemsOf(counted)).toContainEqual(expect.stringContaining('says accepted 2, the journal has 1'));
  });

  it('names a join after membership closed or the decision, and membership above its cap', () => {
    expect(problemsOf([created('g', 'ALL_TERMINAL', null), sealed('g', 'CLOSE', 0, 50), decided('g', 'SUCCEEDED', 'ALL_TERMINAL', { from: 'SEALED', members: 0 }, 50), added('g', 't1', 1)])).toContainEqual(expect.stringContaining('after the group decided'));
    expect(problemsOf([created('g', 'FIRST_ACCEPTED', 1), sealed('g', 'SEAL', 0, 50), added('g', 't1', 1)])).toContainEqual(expect.stringContaining('after membership closed'));
    expect(problemsOf([created('g', 'FIRST_ACCEPTED', 1, 1), added('g', 't1', 1), added('g', 't2', 2)])).toContainEqual(expect.stringContaining('above expectedMembers 1'));
    expect(problemsOf([created('g', 'ALL_TERMINAL', null), added('g', 't1', 1), added('h', 't1', 1)])).toContainEqual(expect.stringContaining('before group.created'));
  });

  it('names a group left undecided after its condition was met, and wrong or repeated verdicts', () => {
    // t1 succeeded and was accepted: FIRST_ACCEPTED is met, but the next change comes with no decision.
    const stuck = [created('g', 'FIRST_ACCEPTED', 1), task('t1', 'submitted'), added('g', 't1', 1), task('t1', 'succeeded'), verdict('g', 't1', 'ACCEPTED'), task('t2', 'submitted'), added('g', 't2', 2, 'PENDING', 400)];
    expect(problemsOf(stuck)).toContainEqual(expect.stringContaining('came before any decision'));
    expect(problemsOf(stuck.slice(0, 5))).toContainEqual(expect.stringContaining('at the end of the journal but it never decided'));
    const wrong = [created('g', 'N_ACCEPTED', 3), task('t1', 'submitted'), added('g', 't1', 1), task('t1', 'running'), verdict('g', 't1', 'ACCEPTED'), verdict('g', 't1', 'REJECTED', 350)];
    const problems = problemsOf(wrong);
    expect(problems).toContainEqual(expect.stringContaining('ACCEPTED at 1970-01-01T00:00:00.300Z while RUNNING'));
    expect(problems).toContainEqual(expect.stringContaining('a verdict is final'));
  });
});

describe('the rule oracle', () => {
  const rule = (condition: 'FIRST_ACCEPTED' | 'N_ACCEPTED' | 'ALL_TERMINAL', threshold: number | null, expectedMembers: number | null = null) => ({ condition, threshold, expectedMembers, deadlineMs: null });
  it('decides as docs/design/0010-task-groups.md says', () => {
    expect(ruleSays(rule('N_ACCEPTED', 2), false, [{ verdict: 'ACCEPTED', taskState: 'SUCCEEDED' }, { verdict: 'ACCEPTED', taskState: 'SUCCEEDED' }])?.outcomeReason).toBe('THRESHOLD_MET');
    expect(ruleSays(rule('N_ACCEPTED', 2), false, [{ verdict: 'REJECTED', taskState: 'FAILED' }])).toBeUndefined();
    expect(ruleSays(rule('N_ACCEPTED', 2, 2), false, [{ verdict: 'REJECTED', taskState: 'FAILED' }])?.outcomeReason).toBe('THRESHOLD_UNREACHABLE');
    expect(ruleSays(rule('FIRST_ACCEPTED', 1), true, [{ verdict: 'PENDING', taskState: 'SUCCEEDED' }])).toBeUndefined();
    expect(ruleSays(rule('FIRST_ACCEPTED', 1), true, [{ verdict: 'PENDING', taskState: 'CANCELLED' }])?.outcomeReason).toBe('THRESHOLD_UNREACHABLE');
    expect(ruleSays(rule('ALL_TERMINAL', null), true, [])?.outcomeReason).toBe('ALL_TERMINAL');
    expect(ruleSays(rule('ALL_TERMINAL', null), false, [{ verdict: 'PENDING', taskState: 'FAILED' }])).toBeUndefined();
  });
});

describe('the group ledger', () => {
  it('names a decided outcome that a later reply shows changed, or undone', () => {
    const violations: string[] = [];
    const ledger = new GroupLedger((v) => violations.push(v));
    const view = { id: 'g', state: 'DECIDED', outcome: 'SUCCEEDED', outcomeReason: 'THRESHOLD_MET', decidedAt: '2026-01-01T00:00:01.000Z' };
    ledger.observed(view);
    ledger.observed(view);
    expect(violations).toEqual([]);
    ledger.observed({ ...view, outcome: 'FAILED', outcomeReason: 'THRESHOLD_UNREACHABLE' });
    ledger.observed({ ...view, state: 'SEALED', outcome: null, outcomeReason: null, decidedAt: null });
    expect(violations).toEqual([expect.stringContaining('a later one FAILED THRESHOLD_UNREACHABLE'), expect.stringContaining('showed it SEALED after')]);
  });
});
