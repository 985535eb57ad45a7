import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Mailbox, Task, TaskGroup } from '@baton/core';
import type { SqlStore } from '@baton-coordination/server/store/sql/sql-store';
import { storeTargets, useTenantStore } from './support/databases';

const T0 = 1_700_000_000_000;

/**
 * A task's end (complete, nack, cancel) reads its task without a lock, tells the task's group
 * when the task it read has one, and sends the task update with its COMMIT. A join-task that
 * commits between that read and the update makes the task a member the end never told its
 * group of: the group would keep a member that ended unseen, undecided while its rule was met.
 * The update holds only for the group_id it was read with; otherwise the transaction lost a race
 * and runs again, reading the group this time (server/src/store/sql/repositories/tasks.ts).
 * Staged with the repositories: only real PostgreSQL runs a join between another transaction's
 * read and its write.
 */
describe.each(storeTargets().filter((t) => t.concurrentTransactions))('a task update racing a join-task on $name', (target) => {
  const tenant = useTenantStore(target, T0);
  let box: Mailbox;

  beforeEach(async () => {
    box = { id: randomUUID(), spaceId: tenant.spaceId, name: `box-${randomUUID()}`, mode: 'WORK', recipientId: null, backlogLimit: 1000, createdAt: T0, updatedAt: T0 };
    await tenant.store.transaction((tx) => tx.mailboxes.insert(box));
  });

  const group = (): TaskGroup => ({
    id: randomUUID(), spaceId: tenant.spaceId, scopeId: randomUUID(), parentScopeId: null, mailboxId: box.id, condition: 'ALL_TERMINAL', threshold: null, expectedMembers: null,
    deadline: null, state: 'OPEN', outcome: null, outcomeReason: null, memberCount: 0, decidedAt: null, createdAt: T0, updatedAt: T0,
  });
  const task = (): Task => ({
    id: randomUUID(), spaceId: tenant.spaceId, taskKey: `k-${randomUUID()}`, fingerprint: 'f'.repeat(64), mailboxId: box.id, scopeId: randomUUID(), state: 'RUNNING', input: null,
    requirements: { pools: [], quotas: [], budgets: [] }, workLimit: null, deadline: null, attempts: 1, outcome: null, failureReason: null, messageId: null, groupId: null, tombstoned: false,
    createdAt: T0, updatedAt: T0,
  });

  /**
   * Ends `tasks` in one transaction that reads them, waits for `between` (the first time only),
   * then updates them all. Answers the groupIds each run read.
   */
  async function endAcrossJoin(tasks: Task[], between: (firstRead: Promise<void>) => Promise<void>): Promise<(string | null)[][]> {
    const { store, spaceId } = tenant;
    const reads: (string | null)[][] = [];
    let readOnce!: () => void;
    const firstRead = new Promise<void>((resolve) => (readOnce = resolve));
    const joined = between(firstRead);
    await store.transaction(async (tx) => {
      const read = await Promise.all(tasks.map(async (t) => (await tx.tasks.get(spaceId, t.id))!));
      reads.push(read.map((t) => t.groupId));
      if (reads.length === 1) {
        readOnce();
        await joined;
      }
      for (const t of read) await tx.tasks.update({ ...t, state: 'SUCCEEDED', updatedAt: T0 + 5 });
    });
    return reads;
  }

  it.each([1, 2])('an end of %i task(s) read before a join commits runs again and reads the group', async (count) => {
    const { store, spaceId } = tenant;
    const g = group();
    const tasks = Array.from({ length: count }, task);
    await store.transaction(async (tx) => {
      await tx.taskGroups.insert(g);
      for (const t of tasks) await tx.tasks.insert(t);
    });
    const racedBefore = (store as SqlStore).racedTransactions;

    const reads = await endAcrossJoin(tasks, async (firstRead) => {
      await firstRead;
      await store.transaction((tx) => tx.taskGroups.addMember({ spaceId, groupId: g.id, taskId: tasks[0]!.id, position: 1, verdict: 'PENDING', joinedAt: T0 + 1, verdictAt: null }));
    });

    expect(reads).toEqual([tasks.map(() => null), tasks.map((_, i) => (i === 0 ? g.id : null))]);
    expect((store as SqlStore).racedTransactions).toBe(racedBefore + 1);
    expect(await store.read((tx) => tx.tasks.get(spaceId, tasks[0]!.id))).toMatchObject({ state: 'SUCCEEDED', groupId: g.id });
  });

  it('an end read after the join, or with no join at all, goes through at once', async () => {
    const { store } = tenant;
    const racedBefore = (store as SqlStore).racedTransactions;
    const t = task();
    await store.transaction((tx) => tx.tasks.insert(t));
    expect(await endAcrossJoin([t], async () => undefined)).toEqual([[null]]);
    expect((store as SqlStore).racedTransactions).toBe(racedBefore);
  });
});
