import type { DeliveryRequirements, JournalEvent } from '@baton/core';
import { describe, expect, it } from 'vitest';
import { checkDrained, judgeTaskDeadlines, replayTasks, TaskLedger, type ClaimedView, type DeliveryFacts, type TaskWorld } from './tasks';

/** The task journal replay bites: each broken history is named, a sound one passes. */
const world: TaskWorld = {
  mailboxIds: ['mb'],
  pools: [{ id: 'p1', name: 'gpu', capacity: 2 }],
  workLimits: [{ id: 'w1', name: 'slots', maxConcurrent: 1 }],
  allowances: [{ id: 'a1', name: 'quota', unitsLimit: 3, windowSeconds: 10, createdAt: 0 }],
  budgets: [{ id: 'b1', name: 'money', limitMinor: 1_000n }],
};
const gpu = (units: number): DeliveryRequirements => ({ pools: [{ id: 'p1', name: 'gpu', units }], quotas: [], budgets: [], workLimit: null });
const slot: DeliveryRequirements = { pools: [], quotas: [], budgets: [], workLimit: { id: 'w1', name: 'slots' } };

let nextId = 0;
const at = (occurredAt: number, type: string, aggregateType: string, aggregateId: string, data: Record<string, unknown>): JournalEvent => ({
  eventId: String(++nextId), spaceId: 's', type, aggregateType, aggregateId, scopeId: 'scope', data, occurredAt,
});
const sent = (m: string) => at(0, 'message.sent', 'mailbox', 'mb', { messageId: m, attempt: 0 });
const none: ClaimedView = { pools: [], quotas: [], budgets: [], workLimit: null };
const claimedBy = (m: string, attempt: number, claimed: ClaimedView | null, t = 1_000, session = 'w:0') =>
  at(t, 'message.claimed', 'mailbox', 'mb', { messageId: m, attempt, holderSession: session, leaseExpiresAt: new Date(t + 5_000).toISOString(), ...(claimed ? { admitted: true, claimed } : {}) });
const poolClaimed = (m: string, units: number, inUse: number, t = 1_000) => at(t, 'pool.units_claimed', 'pool', 'p1', { messageId: m, units, inUse });
const poolReleased = (m: string, units: number, inUse: number, t = 2_000) => at(t, 'pool.units_released', 'pool', 'p1', { messageId: m, units, inUse });
const slotClaimed = (m: string, inUse: number, t = 1_000) => at(t, 'work_limit.slot_claimed', 'work_limit', 'w1', { messageId: m, inUse });
const slotReleased = (m: string, inUse: number, t = 2_000) => at(t, 'work_limit.slot_released', 'work_limit', 'w1', { messageId: m, inUse });
const reserved = (m: string, r: string, amountMinor: string, t = 1_000) => at(t, 'budget.reserved', 'budget', 'b1', { messageId: m, reservationId: r, amountMinor });
const ended = (m: string, type: string, attempt: number, t = 2_000, state = 'READY') => at(t, `message.${type}`, 'mailbox', 'mb', { messageId: m, attempt, state });
const task = (id: string, type: string) => at(3_000, `task.${type}`, 'task', id, { taskId: id });
const withGpu = (units: number): ClaimedView => ({ ...none, pools: [{ name: 'gpu', units }] });

function problemsOf(journal: JournalEvent[], facts: Record<string, [number, DeliveryRequirements | null]> = {}, fifo = true): string[] {
  const problems: string[] = [];
  const byId = new Map<string, DeliveryFacts>(Object.entries(facts).map(([id, [seq, requirements]]) => [id, { seq, requirements }]));
  const replay = replayTasks(journal, world, byId, problems, fifo);
  checkDrained(replay, world, problems);
  return problems;
}

describe('task journal replay', () => {
  it('passes a sound history: admissions with resources, a pass-over of a short delivery, releases, one outcome each', () => {
    const journal = [
      sent('m1'), sent('m2'), sent('m3'),
      poolClaimed('m1', 2, 2), claimedBy('m1', 1, withGpu(2)),
      // m2 needs the pool, which m1 holds in full: admission passes it over for m3.
      slotClaimed('m3', 1), claimedBy('m3', 1, { ...none, workLimit: 'slots' }, 1_000, 'v:0'),
      poolReleased('m1', 2, 0), ended('m1', 'acked', 1), task('t1', 'succeeded'),
      slotReleased('m3', 0), ended('m3', 'nacked', 1, 2_000, 'DEAD'), task('t3', 'failed'),
    ];
    expect(problemsOf(journal, { m1: [1, gpu(2)], m2: [2, gpu(1)], m3: [3, slot] })).toEqual([]);
  });

  it('names two live leases, a claim after ACKED, attempts above 5, and a second terminal outcome', () => {
    expect(problemsOf([sent('m1'), claimedBy('m1', 1, null), claimedBy('m1', 2, null, 1_500)])).toContainEqual(expect.stringContaining('two live leases'));
    expect(problemsOf([sent('m1'), claimedBy('m1', 1, null), ended('m1', 'acked', 1), claimedBy('m1', 2, null, 3_000)])).toContainEqual(expect.stringContaining('after it was ACKED'));
    const six = [sent('m1'), ...[1, 2, 3, 4, 5, 6].flatMap((n) => [claimedBy('m1', n, null, n * 10_000), ended('m1', 'lease_expired', n, n * 10_000 + 6_000)])];
    expect(problemsOf(six)).toContainEqual(expect.stringContaining('attempt 6 > 5'));
    expect(problemsOf([task('t1', 'succeeded'), task('t1', 'cancelled')])).toContainEqual(expect.stringContaining('second terminal outcome'));
  });

  it('names pool units and work-limit slots above their limits', () => {
    const pools = [sent('m1'), sent('m2'), poolClaimed('m1', 2, 2), claimedBy('m1', 1, withGpu(2)), poolClaimed('m2', 1, 3), claimedBy('m2', 1, withGpu(1), 1_000, 'v:0')];
    expect(problemsOf(pools, {}, false)).toContainEqual(expect.stringContaining('3 units in use'));
    const slots = [sent('m1'), sent('m2'), slotClaimed('m1', 1), claimedBy('m1', 1, { ...none, workLimit: 'slots' }), slotClaimed('m2', 2), claimedBy('m2', 1, { ...none, workLimit: 'slots' }, 1_000, 'v:0')];
    expect(problemsOf(slots, {}, false)).toContainEqual(expect.stringContaining('2 slots in use'));
  });

  it('names a partial admission and a resource claim that belongs to no admission', () => {
    const partial = [sent('m1'), poolClaimed('m1', 1, 1), claimedBy('m1', 1, { ...withGpu(1), workLimit: 'slots' })];
    expect(problemsOf(partial, {}, false)).toContainEqual(expect.stringContaining('partial admission of delivery m1'));
    const orphan = [sent('m1'), poolClaimed('m1', 1, 1), ended('m1', 'cancelled', 0)];
    expect(problemsOf(orphan, {}, false)).toContainEqual(expect.stringContaining('without its message.claimed'));
  });

  it('names an admission that passed over an older admissible delivery (FIFO)', () => {
    const journal = [sent('m1'), sent('m2'), poolClaimed('m2', 1, 1), claimedBy('m2', 1, withGpu(1))];
    expect(problemsOf(journal, { m1: [1, gpu(1)], m2: [2, gpu(1)] })).toContainEqual(expect.stringContaining('passed over the older READY delivery m1'));
    expect(problemsOf(journal, { m1: [1, null], m2: [2, gpu(1)] })).toContainEqual(expect.stringContaining('passed over the older READY delivery m1'));
  });

  it('holds FIFO over the subtree of the claim scope (the gate scope of a group below it), and names a claim from outside the subtree', () => {
    // m1 is a group member in gate scope 'gate' below 'scope'; an admit on 'scope' takes m2 over it.
    const group = at(0, 'group.created', 'group', 'g1', { groupId: 'g1', parentScopeId: 'scope' });
    const inGate = (m: string) => ({ ...sent(m), scopeId: 'gate' });
    const onScope = (e: JournalEvent, claimScopeId: string) => ({ ...e, data: { ...e.data, claimScopeId } });
    const passedOver = [{ ...group, scopeId: 'gate' }, inGate('m1'), sent('m2'), onScope(claimedBy('m2', 1, none), 'scope')];
    expect(problemsOf(passedOver, { m1: [1, null], m2: [2, null] })).toContainEqual(expect.stringContaining('passed over the older READY delivery m1'));
    // The member taken first, then m2: sound. Without the group, a claim on 'scope' of the gate's delivery is from outside its subtree.
    const inOrder = [{ ...group, scopeId: 'gate' }, inGate('m1'), sent('m2'), onScope(claimedBy('m1', 1, none), 'scope'), onScope(claimedBy('m2', 1, none, 1_000, 'v:0'), 'scope')];
    expect(problemsOf(inOrder, { m1: [1, null], m2: [2, null] }, true).filter((p) => !p.includes('still'))).toEqual([]);
    expect(problemsOf(inOrder.slice(1), { m1: [1, null], m2: [2, null] })).toContainEqual(expect.stringContaining('claimed at 1970-01-01T00:00:01.000Z by a request on scope scope, which is not its scope nor above it'));
  });

  it('names a claim that ended keeping its units, a release of what was not held, a failed claim leaving its reservation ACTIVE, and leftovers', () => {
    const kept = [sent('m1'), poolClaimed('m1', 2, 2), claimedBy('m1', 1, withGpu(2)), ended('m1', 'nacked', 1)];
    const keptProblems = problemsOf(kept, {}, false);
    expect(keptProblems).toContainEqual(expect.stringContaining('released 0 of its 2 units of pool gpu'));
    expect(keptProblems).toContainEqual(expect.stringContaining('2 units still in use after the liveness phase'));
    expect(problemsOf([sent('m1'), claimedBy('m1', 1, null), poolReleased('m1', 1, 0)], {}, false)).toContainEqual(expect.stringContaining('but held 0'));
    const budget = { ...none, budgets: [{ name: 'money', reservationId: 'r1', amountMinor: '300' }] };
    const active = [sent('m1'), reserved('m1', 'r1', '300'), claimedBy('m1', 1, budget), ended('m1', 'lease_expired', 1, 7_000)];
    const activeProblems = problemsOf(active, {}, false);
    expect(activeProblems).toContainEqual(expect.stringContaining('leaving its reservation r1 ACTIVE'));
    expect(activeProblems).toContainEqual(expect.stringContaining('admission reservation r1 (delivery m1) still ACTIVE'));
  });
});

describe('task ledger', () => {
  it('names one taskKey answering two tasks, a delivery after a complete answered 200, and a token accepted after its lease', () => {
    const problems: string[] = [];
    const ledger = new TaskLedger((m) => problems.push(m));
    ledger.submitted('k', 't1');
    ledger.submitted('k', 't1');
    expect(problems).toEqual([]);
    ledger.submitted('k', 't2');
    ledger.delivered({ messageId: 'm1', token: 'a', session: 'w:0', attempt: 1, leaseExpiresAtMs: 5_000, claimed: null }, 0);
    ledger.accepted('a', 'complete', 1_000, 1_100);
    ledger.delivered({ messageId: 'm1', token: 'b', session: 'v:0', attempt: 2, leaseExpiresAtMs: 9_000, claimed: null }, 4_000);
    ledger.delivered({ messageId: 'm2', token: 'c', session: 'v:0', attempt: 6, leaseExpiresAtMs: 9_000, claimed: null }, 4_000);
    ledger.accepted('c', 'nack', 9_500, 9_600);
    expect(problems).toEqual([
      expect.stringContaining('answered two tasks'),
      expect.stringContaining('delivered again'),
      expect.stringContaining('attempt 6 > 5'),
      expect.stringContaining('after its lease ran out'),
    ]);
  });
});

describe('task deadlines', () => {
  it('passes a task expired at its deadline and one ended before it; names an expiry before the deadline and a task left PENDING past it', () => {
    const journal = [task('t1', 'expired'), task('t3', 'expired')];
    const sound = [
      { id: 't1', state: 'EXPIRED', deadline: 3_000 },
      { id: 't2', state: 'SUCCEEDED', deadline: 9_000 },
      { id: 't4', state: 'PENDING', deadline: null },
      { id: 't5', state: 'RUNNING', deadline: 8_000 },
    ];
    expect(judgeTaskDeadlines(sound, journal, 5_000)).toEqual([]);
    const broken = [
      { id: 't3', state: 'EXPIRED', deadline: 3_500 },
      { id: 't6', state: 'PENDING', deadline: 4_000 },
    ];
    const problems = judgeTaskDeadlines(broken, journal, 5_000);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/task t3 expired at .* before its deadline/);
    expect(problems[1]).toMatch(/task t6 is still PENDING at the end/);
  });
});
