import { describe, expect, it } from 'vitest';
import { InvariantViolation } from '../assert';
import { maxAttempts } from '../messages/model';
import { maxPoolRequirements, maxQuotaRequirements, type Task, type TaskRequirements } from './model';
import { assertTask, claimMove, movedWithDelivery, taskFingerprint } from './rules';

const none: TaskRequirements = { pools: [], quotas: [], budgets: [] };
const task: Task = {
  id: 't1', spaceId: 's', taskKey: 'k', fingerprint: 'f', mailboxId: 'm', scopeId: 'sc', state: 'PENDING', input: { a: 1 },
  requirements: none, workLimit: null, deadline: null, attempts: 0, outcome: null, failureReason: null, messageId: null,
  groupId: null, tombstoned: false, createdAt: 1, updatedAt: 1,
};
const need = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `r${i}`, units: 1 }));

describe('task rules', () => {
  it('fingerprints mailbox, input, requirements and work limit, whatever the order of the input keys', () => {
    const fp = taskFingerprint('m', { a: 1, b: 2 }, none, null);
    expect(fp).toMatch(/^[0-9a-f]{64}$/);
    expect(taskFingerprint('m', { b: 2, a: 1 }, none, null)).toBe(fp);
    expect(taskFingerprint('m2', { a: 1, b: 2 }, none, null)).not.toBe(fp);
    expect(taskFingerprint('m', { a: 1, b: 3 }, none, null)).not.toBe(fp);
    expect(taskFingerprint('m', { a: 1, b: 2 }, { ...none, pools: need(1) }, null)).not.toBe(fp);
    expect(taskFingerprint('m', { a: 1, b: 2 }, none, 'crawl')).not.toBe(fp);
  });

  it('passes stored tasks that keep the invariants', () => {
    const ok: Task[] = [
      task,
      { ...task, attempts: maxAttempts, state: 'RUNNING' },
      { ...task, requirements: { ...none, pools: need(maxPoolRequirements), quotas: need(maxQuotaRequirements) } },
      { ...task, state: 'SUCCEEDED', outcome: { ok: true } },
      { ...task, state: 'FAILED', failureReason: 'boom', outcome: { partial: 1 } },
      { ...task, state: 'CANCELLED', tombstoned: true, input: null, outcome: null, failureReason: 'RUN_CANCELLED' },
    ];
    for (const t of ok) expect(() => assertTask(t)).not.toThrow();
  });

  it('refuses stored tasks that break an invariant', () => {
    const broken: Task[] = [
      { ...task, attempts: -1 },
      { ...task, attempts: maxAttempts + 1 },
      { ...task, attempts: 0.5 },
      { ...task, requirements: { ...none, pools: need(maxPoolRequirements + 1) } },
      { ...task, requirements: { ...none, quotas: need(maxQuotaRequirements + 1) } },
      { ...task, state: 'SUCCEEDED', failureReason: 'boom' },
      { ...task, state: 'RUNNING', failureReason: 'boom' },
      { ...task, state: 'PENDING', outcome: { early: true } },
      { ...task, tombstoned: true, input: null },
      { ...task, state: 'FAILED', tombstoned: true, input: { a: 1 } },
      { ...task, state: 'SUCCEEDED', tombstoned: true, input: null, outcome: { ok: true } },
    ];
    for (const t of broken) expect(() => assertTask(t), JSON.stringify(t)).toThrow(InvariantViolation);
  });

  it('moves a live task with its delivery and leaves an ended one as it is', () => {
    const move = claimMove(2, 50);
    expect(move).toEqual({ state: 'RUNNING', attempts: 2, outcome: null, failureReason: null, updatedAt: 50 });
    expect(movedWithDelivery(task, move)).toEqual({ ...task, state: 'RUNNING', attempts: 2, updatedAt: 50 });
    expect(movedWithDelivery({ ...task, state: 'RUNNING', attempts: 1 }, move)).toEqual({ ...task, state: 'RUNNING', attempts: 2, updatedAt: 50 });
    for (const ended of ['SUCCEEDED', 'FAILED', 'CANCELLED', 'EXPIRED'] as const) {
      const failureReason = ended === 'SUCCEEDED' ? null : 'ended';
      expect(movedWithDelivery({ ...task, state: ended, failureReason }, move)).toBeUndefined();
    }
  });

  it('refuses a move that would break the task invariants', () => {
    expect(() => movedWithDelivery(task, { ...claimMove(maxAttempts + 1, 50) })).toThrow(InvariantViolation);
    expect(() => movedWithDelivery(task, { ...claimMove(1, 50), failureReason: 'x' })).toThrow(InvariantViolation);
  });
});
