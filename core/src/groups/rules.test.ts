import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvariantViolation } from '../assert';
import { isTerminalTask, taskStates, type TaskState } from '../tasks/model';
import { maxGroupMembers, type GroupCondition, type MemberStanding, type TaskGroup, type Verdict } from './model';
import { assertGroup, checkVerdict, decide, membershipCap } from './rules';

const T0 = 1_700_000_000_000;

const group = (over: Partial<TaskGroup> = {}): TaskGroup => ({
  id: 'g', spaceId: 's', scopeId: 'gate', parentScopeId: null, mailboxId: 'b', condition: 'N_ACCEPTED', threshold: 2, expectedMembers: null, deadline: null,
  state: 'OPEN', outcome: null, outcomeReason: null, memberCount: 0, decidedAt: null, createdAt: T0, updatedAt: T0, ...over,
});
const member = (taskState: TaskState, verdict: Verdict = 'PENDING'): MemberStanding => ({ taskId: `t-${Math.random()}`, taskState, verdict });
const withMembers = (g: Partial<TaskGroup>, members: MemberStanding[]): [TaskGroup, MemberStanding[]] => [group({ ...g, memberCount: members.length }), members];

describe('decide (docs/design/0010-task-groups.md)', () => {
  it('decides SUCCEEDED THRESHOLD_MET at threshold accepted, while membership is still open', () => {
    const [g, ms] = withMembers({ threshold: 2 }, [member('SUCCEEDED', 'ACCEPTED'), member('SUCCEEDED', 'ACCEPTED'), member('RUNNING')]);
    expect(decide(g, ms, T0)).toEqual({ outcome: 'SUCCEEDED', outcomeReason: 'THRESHOLD_MET' });
    expect(decide(...withMembers({ threshold: 2 }, [member('SUCCEEDED', 'ACCEPTED'), member('RUNNING')]), T0)).toBeUndefined();
  });

  it('decides FAILED THRESHOLD_UNREACHABLE once closed membership cannot reach the threshold', () => {
    const failedOne = [member('SUCCEEDED', 'ACCEPTED'), member('FAILED'), member('SUCCEEDED', 'REJECTED')];
    expect(decide(...withMembers({ state: 'SEALED', threshold: 2 }, failedOne), T0)).toEqual({ outcome: 'FAILED', outcomeReason: 'THRESHOLD_UNREACHABLE' });
    // Open membership can still bring an accepted member.
    expect(decide(...withMembers({ threshold: 2 }, failedOne), T0)).toBeUndefined();
    // A live or SUCCEEDED member without a verdict can still be accepted.
    expect(decide(...withMembers({ state: 'SEALED', threshold: 2 }, [member('SUCCEEDED', 'ACCEPTED'), member('PENDING')]), T0)).toBeUndefined();
  });

  it('counts the members that can still join: an open group short of room is already unreachable', () => {
    expect(decide(...withMembers({ threshold: 3, expectedMembers: 3 }, [member('CANCELLED'), member('RUNNING')]), T0)).toEqual({ outcome: 'FAILED', outcomeReason: 'THRESHOLD_UNREACHABLE' });
    expect(decide(group({ threshold: maxGroupMembers + 1 }), [], T0)).toEqual({ outcome: 'FAILED', outcomeReason: 'THRESHOLD_UNREACHABLE' });
    expect(decide(group({ threshold: 3, expectedMembers: 3 }), [], T0)).toBeUndefined();
  });

  it('decides ALL_TERMINAL once membership is closed and every member is terminal, also with none', () => {
    const all = { condition: 'ALL_TERMINAL' as const, threshold: null };
    expect(decide(...withMembers({ ...all, state: 'SEALED' }, [member('FAILED'), member('SUCCEEDED')]), T0)).toEqual({ outcome: 'SUCCEEDED', outcomeReason: 'ALL_TERMINAL' });
    expect(decide(...withMembers({ ...all, state: 'SEALED' }, []), T0)).toEqual({ outcome: 'SUCCEEDED', outcomeReason: 'ALL_TERMINAL' });
    expect(decide(...withMembers(all, [member('FAILED')]), T0)).toBeUndefined();
    expect(decide(...withMembers({ ...all, state: 'SEALED' }, [member('FAILED'), member('RUNNING')]), T0)).toBeUndefined();
  });

  it('lets a passed deadline decide first, FAILED DEADLINE_EXCEEDED, even when the condition is also met', () => {
    const [g, ms] = withMembers({ threshold: 1, deadline: T0 }, [member('SUCCEEDED', 'ACCEPTED')]);
    expect(decide(g, ms, T0)).toEqual({ outcome: 'FAILED', outcomeReason: 'DEADLINE_EXCEEDED' });
    expect(decide(g, ms, T0 - 1)).toEqual({ outcome: 'SUCCEEDED', outcomeReason: 'THRESHOLD_MET' });
  });

  it('refuses to decide a DECIDED group again, or from members that disagree with memberCount', () => {
    expect(() => decide(group({ state: 'DECIDED', outcome: 'FAILED', outcomeReason: 'DEADLINE_EXCEEDED', decidedAt: T0 }), [], T0)).toThrow(InvariantViolation);
    expect(() => decide(group({ memberCount: 1 }), [], T0)).toThrow(InvariantViolation);
  });
});

describe('checkVerdict', () => {
  it('accepts only a SUCCEEDED member and rejects only a terminal one', () => {
    expect(checkVerdict('PENDING', 'ACCEPTED', 't', 'SUCCEEDED')).toBe(true);
    expect(() => checkVerdict('PENDING', 'ACCEPTED', 't', 'FAILED')).toThrow(/FAILED; only a SUCCEEDED member/);
    expect(checkVerdict('PENDING', 'REJECTED', 't', 'EXPIRED')).toBe(true);
    expect(() => checkVerdict('PENDING', 'REJECTED', 't', 'RUNNING')).toThrow(/RUNNING; only a terminal member/);
  });

  it('answers a repeat as nothing new and refuses to change a verdict', () => {
    expect(checkVerdict('ACCEPTED', 'ACCEPTED', 't', 'SUCCEEDED')).toBe(false);
    expect(() => checkVerdict('ACCEPTED', 'REJECTED', 't', 'SUCCEEDED')).toThrow(/already ACCEPTED/);
  });
});

describe('assertGroup', () => {
  it('refuses an OPEN group with a full membership, and an outcome without DECIDED', () => {
    expect(() => assertGroup(group({ expectedMembers: 2, memberCount: 2 }))).toThrow(InvariantViolation);
    expect(() => assertGroup(group({ outcome: 'SUCCEEDED', outcomeReason: 'THRESHOLD_MET', decidedAt: T0 }))).toThrow(InvariantViolation);
    expect(() => assertGroup(group({ condition: 'ALL_TERMINAL', threshold: 2 }))).toThrow(InvariantViolation);
    expect(() => assertGroup(group({ state: 'SEALED', expectedMembers: 2, memberCount: 2 }))).not.toThrow();
  });

  it('passes the groups that keep every invariant', () => {
    const decided = { state: 'DECIDED' as const, outcome: 'SUCCEEDED' as const, outcomeReason: 'THRESHOLD_MET' as const, decidedAt: T0 };
    const ok: TaskGroup[] = [
      group(),
      group({ memberCount: maxGroupMembers - 1 }),
      group({ state: 'SEALED', memberCount: maxGroupMembers }),
      group({ ...decided, memberCount: 3 }),
      group({ condition: 'FIRST_ACCEPTED', threshold: 1 }),
      group({ condition: 'N_ACCEPTED', threshold: 1 }),
      group({ condition: 'ALL_TERMINAL', threshold: null }),
    ];
    for (const g of ok) expect(() => assertGroup(g), JSON.stringify(g)).not.toThrow();
  });

  it('refuses each broken invariant on its own: the member count, DECIDED without its whole outcome, and each condition\'s threshold', () => {
    const decided = { state: 'DECIDED' as const, outcome: 'SUCCEEDED' as const, outcomeReason: 'THRESHOLD_MET' as const, decidedAt: T0 };
    const broken: TaskGroup[] = [
      group({ memberCount: -1 }),
      group({ memberCount: 0.5 }),
      group({ state: 'SEALED', memberCount: maxGroupMembers + 1 }),
      group({ state: 'SEALED', expectedMembers: 3, memberCount: 4 }),
      group({ ...decided, outcome: null }),
      group({ ...decided, outcomeReason: null }),
      group({ ...decided, decidedAt: null }),
      group({ state: 'SEALED', outcome: 'FAILED', outcomeReason: 'DEADLINE_EXCEEDED', decidedAt: T0 }),
      group({ condition: 'FIRST_ACCEPTED', threshold: 2 }),
      group({ condition: 'N_ACCEPTED', threshold: null }),
      group({ condition: 'N_ACCEPTED', threshold: 0 }),
      group({ condition: 'ALL_TERMINAL', threshold: 1 }),
    ];
    for (const g of broken) expect(() => assertGroup(g), JSON.stringify(g)).toThrow(InvariantViolation);
  });
});

// ---------------------------------------------------------------------------------------------
// The rule against a brute-force oracle, over many consistent group states.

/** A member as it may be: a verdict only on a task whose state allows it. */
const memberArb: fc.Arbitrary<MemberStanding> = fc
  .tuple(fc.constantFrom(...taskStates), fc.constantFrom<Verdict>('PENDING', 'ACCEPTED', 'REJECTED'))
  .map(([taskState, verdict]) => {
    const allowed = verdict === 'PENDING' || (verdict === 'ACCEPTED' ? taskState === 'SUCCEEDED' : isTerminalTask(taskState));
    return { taskId: 't', taskState, verdict: allowed ? verdict : 'PENDING' };
  });

const groupArb = fc
  .record({
    condition: fc.constantFrom<GroupCondition>('FIRST_ACCEPTED', 'N_ACCEPTED', 'ALL_TERMINAL'),
    threshold: fc.integer({ min: 1, max: 8 }),
    expectedMembers: fc.option(fc.integer({ min: 1, max: 6 }), { nil: null }),
    members: fc.array(memberArb, { maxLength: 6 }),
    sealed: fc.boolean(),
    deadlineOffsetMs: fc.option(fc.integer({ min: -5, max: 5 }), { nil: null }),
  })
  .map(({ condition, threshold, expectedMembers, members, sealed, deadlineOffsetMs }) => {
    const cap = expectedMembers ?? maxGroupMembers;
    const ms = members.slice(0, cap);
    // Membership reaching its cap closes it; only a close or seal closes it earlier.
    const state = sealed || ms.length === cap ? ('SEALED' as const) : ('OPEN' as const);
    const g = group({
      condition,
      threshold: condition === 'ALL_TERMINAL' ? null : condition === 'FIRST_ACCEPTED' ? 1 : threshold,
      expectedMembers,
      memberCount: ms.length,
      state,
      deadline: deadlineOffsetMs === null ? null : T0 + deadlineOffsetMs,
    });
    assertGroup(g);
    return { g, ms };
  });

/**
 * The most accepted verdicts any future can bring, found by trying every future of every member
 * (accepted, or not) plus every number of joiners, rather than by the rule's own counting.
 */
function mostAcceptedPossible(g: TaskGroup, ms: readonly MemberStanding[]): number {
  const canEndAccepted = (m: MemberStanding): boolean => m.verdict === 'ACCEPTED' || (m.verdict === 'PENDING' && (m.taskState === 'SUCCEEDED' || !isTerminalTask(m.taskState)));
  let best = 0;
  for (let mask = 0; mask < 1 << ms.length; mask++) {
    const chosen = ms.filter((m, i) => (mask & (1 << i)) !== 0);
    if (!chosen.every(canEndAccepted)) continue;
    // A member already ACCEPTED stays so in every future.
    const accepted = new Set([...chosen, ...ms.filter((m) => m.verdict === 'ACCEPTED')]).size;
    best = Math.max(best, accepted);
  }
  const joiners = g.state === 'OPEN' ? membershipCap(g) - ms.length : 0;
  return best + joiners;
}

/** What docs/design/0010-task-groups.md says of a group at T0, worked out from the oracle. */
function oracleDecision(g: TaskGroup, ms: readonly MemberStanding[]): ReturnType<typeof decide> {
  if (g.deadline !== null && T0 >= g.deadline) return { outcome: 'FAILED', outcomeReason: 'DEADLINE_EXCEEDED' };
  if (g.condition === 'ALL_TERMINAL') {
    const done = g.state === 'SEALED' && ms.every((m) => isTerminalTask(m.taskState));
    return done ? { outcome: 'SUCCEEDED', outcomeReason: 'ALL_TERMINAL' } : undefined;
  }
  if (ms.filter((m) => m.verdict === 'ACCEPTED').length >= g.threshold!) return { outcome: 'SUCCEEDED', outcomeReason: 'THRESHOLD_MET' };
  return mostAcceptedPossible(g, ms) < g.threshold! ? { outcome: 'FAILED', outcomeReason: 'THRESHOLD_UNREACHABLE' } : undefined;
}

describe('decide against the oracle', () => {
  it('decides exactly when the condition is met or can no longer be met, with the reason that holds', () => {
    fc.assert(
      fc.property(groupArb, ({ g, ms }) => {
        expect(decide(g, ms, T0)).toEqual(oracleDecision(g, ms));
      }),
      { numRuns: 2_000 },
    );
  });

  it('never decides FAILED while some future still meets the threshold, over random verdict sequences', () => {
    // Walk a sealed group through random moves (members end, verdicts), deciding after each as
    // the service does: the first decision must be one no later move could have avoided.
    const moveArb = fc.array(fc.tuple(fc.nat(5), fc.constantFrom('SUCCEEDED', 'FAILED', 'ACCEPT', 'REJECT')), { maxLength: 30 });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 5 }), moveArb, (threshold, size, moves) => {
        const g = group({ threshold, expectedMembers: size, memberCount: size, state: 'SEALED' });
        const ms: MemberStanding[] = Array.from({ length: size }, (_, i) => ({ taskId: `t${i}`, taskState: 'RUNNING', verdict: 'PENDING' }));
        for (const [who, move] of moves) {
          const m = ms[who % size]!;
          if (move === 'SUCCEEDED' || move === 'FAILED') {
            if (!isTerminalTask(m.taskState)) m.taskState = move;
          } else if (move === 'ACCEPT' && m.verdict === 'PENDING' && m.taskState === 'SUCCEEDED') m.verdict = 'ACCEPTED';
          else if (move === 'REJECT' && m.verdict === 'PENDING' && isTerminalTask(m.taskState)) m.verdict = 'REJECTED';
          const decision = decide(g, ms, T0);
          if (!decision) continue;
          const accepted = ms.filter((x) => x.verdict === 'ACCEPTED').length;
          if (decision.outcome === 'SUCCEEDED') expect(accepted).toBeGreaterThanOrEqual(threshold);
          else expect(mostAcceptedPossible(g, ms)).toBeLessThan(threshold);
          break;
        }
      }),
      { numRuns: 1_000 },
    );
  });
});
