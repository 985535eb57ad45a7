import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Mailbox, NewMessage, Store } from '@baton/core';
import { insertTenant, storeTargets } from './support/databases';

/**
 * The usage repository (docs/design/0016-limits-and-retry-after.md) on every store: operations add up per organization and
 * month, request counts are set per server and summed over the others, purges are bounded, and
 * the load counts live task deliveries, claimed messages and pool units of one organization only.
 */
const T0 = 1_700_000_000_000;

describe.each(storeTargets())('usage store conformance on $name', (target) => {
  let store: Store;
  let closeStore: () => Promise<void>;

  beforeEach(async () => {
    const opened = await target.open();
    store = opened.store;
    closeStore = opened.close;
  });
  afterEach(async () => closeStore());

  it('adds operations per organization and month and answers the totals', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    expect(await store.transaction((tx) => tx.usage.addOperations('2026-11', new Map([[a, 3], [b, 1]])))).toEqual(new Map([[a, 3], [b, 1]]));
    expect(await store.transaction((tx) => tx.usage.addOperations('2026-11', new Map([[a, 4]])))).toEqual(new Map([[a, 7]]));
    await store.transaction((tx) => tx.usage.addOperations('2026-12', new Map([[a, 100]])));
    expect(await store.read((tx) => tx.usage.operationsOf('2026-11', [a, b, randomUUID()]))).toEqual(new Map([[a, 7], [b, 1]]));
    expect(await store.read((tx) => tx.usage.operationsOf('2026-11', []))).toEqual(new Map());
  });

  it("sets each server's request count and sums the other servers' for a minute", async () => {
    const org = randomUUID();
    await store.transaction((tx) => tx.usage.putRequestCounts('s1', 100, new Map([[org, 5]])));
    await store.transaction((tx) => tx.usage.putRequestCounts('s1', 100, new Map([[org, 9]])));
    await store.transaction((tx) => tx.usage.putRequestCounts('s2', 100, new Map([[org, 4]])));
    await store.transaction((tx) => tx.usage.putRequestCounts('s3', 100, new Map([[org, 2]])));
    await store.transaction((tx) => tx.usage.putRequestCounts('s2', 99, new Map([[org, 50]])));
    expect(await store.read((tx) => tx.usage.requestCountsOfOthers('s1', 100))).toEqual(new Map([[org, 6]]));
    expect(await store.read((tx) => tx.usage.requestCountsOfOthers('s2', 100))).toEqual(new Map([[org, 11]]));
    expect(await store.read((tx) => tx.usage.requestCountsOfOthers('s9', 101))).toEqual(new Map());
  });

  it('purges request minutes and operation months before a bound, at most a batch at a time', async () => {
    const org = randomUUID();
    for (let minute = 1; minute <= 5; minute++) await store.transaction((tx) => tx.usage.putRequestCounts('s1', minute, new Map([[org, 1]])));
    expect(await store.transaction((tx) => tx.usage.purgeRequestCountsBefore(5, 3))).toBe(3);
    expect(await store.transaction((tx) => tx.usage.purgeRequestCountsBefore(5, 3))).toBe(1);
    expect(await store.read((tx) => tx.usage.requestCountsOfOthers('s2', 5))).toEqual(new Map([[org, 1]]));
    for (const month of ['2025-01', '2025-02', '2025-03']) await store.transaction((tx) => tx.usage.addOperations(month, new Map([[org, 1]])));
    expect(await store.transaction((tx) => tx.usage.purgeOperationsBefore('2025-03', 10))).toBe(2);
    expect(await store.read((tx) => tx.usage.operationsOf('2025-03', [org]))).toEqual(new Map([[org, 1]]));
    expect(await store.read((tx) => tx.usage.operationsOf('2025-02', [org]))).toEqual(new Map());
  });

  it("counts an organization's load: live task deliveries, claimed messages, pool units in use, live claims and ACTIVE runs, and no other organization's", async () => {
    const [orgA, orgB, spaceA1, spaceA2, spaceB] = [randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    await store.transaction(async (tx) => {
      await insertTenant(tx, orgA, spaceA1, T0);
      await tx.spaces.insert({ id: spaceA2, orgId: orgA, name: 's2', limits: null, createdAt: T0, updatedAt: T0 });
      await insertTenant(tx, orgB, spaceB, T0);
      for (const spaceId of [spaceA1, spaceA2, spaceB]) {
        const box: Mailbox = { id: randomUUID(), spaceId, name: 'box', mode: 'WORK', recipientId: null, backlogLimit: 1000, createdAt: T0, updatedAt: T0 };
        await tx.mailboxes.insert(box);
        const message = (over: Partial<NewMessage>): NewMessage => ({
          id: randomUUID(), spaceId, mailboxId: box.id, scopeId: randomUUID(), payload: null, workKey: null, deadline: null, taskId: null, state: 'READY', attempt: 0,
          tokenHash: null, holder: null, holderSession: null, leaseExpiresAt: null, result: null, requirements: null, claimed: null, createdAt: T0, updatedAt: T0, ...over,
        });
        const lease = { tokenHash: randomUUID(), holder: 'h', holderSession: 's', leaseExpiresAt: T0 + 30_000, attempt: 1 };
        await tx.messages.insert(message({ taskId: randomUUID() })); // a PENDING task's delivery
        await tx.messages.insert(message({ taskId: randomUUID(), state: 'CLAIMED', ...lease })); // a RUNNING task's
        await tx.messages.insert(message({ state: 'CLAIMED', ...lease })); // a plain message being worked
        await tx.messages.insert(message({})); // a plain message waiting: no lease, no task
      }
      await tx.pools.insert({ id: randomUUID(), spaceId: spaceA2, name: 'gpu', capacity: 8, inUse: 3, createdAt: T0, updatedAt: T0 });
      const run = (spaceId: string, state: 'ACTIVE' | 'COMPLETED') => ({
        spaceId, scopeId: randomUUID(), parentScopeId: null, name: null, state, childLimit: 10, children: 0, cascadePending: false, createdAt: T0, updatedAt: T0, endedAt: state === 'ACTIVE' ? null : T0,
      });
      // Claims: one live, one whose lease ran out unswept (not a lease any more), one released.
      for (const [claimKey, leaseExpiresAt, state] of [['live', T0 + 30_000, 'HELD'], ['ran-out', T0 - 1, 'HELD'], ['released', T0 + 30_000, 'RELEASED']] as const) {
        const key = await tx.claims.lockKey(spaceA1, claimKey, T0);
        await tx.claims.advanceKey({ ...key, lastFencingToken: 1, updatedAt: T0 });
        await tx.claims.insert({
          id: randomUUID(), spaceId: spaceA1, claimKey, scopeId: randomUUID(), holder: 'h', holderSessionHash: 'a'.repeat(64), tokenHash: 'b'.repeat(64), tokenNonce: 'n',
          fencingToken: 1, state, leaseExpiresAt, endedAt: state === 'HELD' ? null : T0, createdAt: T0 - 10, updatedAt: T0 - 10,
        });
      }
      await tx.runs.insert(run(spaceA1, 'ACTIVE'));
      await tx.runs.insert(run(spaceA2, 'ACTIVE'));
      await tx.runs.insert(run(spaceA2, 'COMPLETED'));
    });
    const loads = await store.read((tx) => tx.usage.loadOf([orgA, randomUUID()], T0));
    expect(loads).toEqual(new Map([[orgA, { activeTasks: 4, liveLeases: 4 + 3 + 1, activeRuns: 2 }]]));
    expect(await store.read((tx) => tx.usage.loadOf([orgB], T0))).toEqual(new Map([[orgB, { activeTasks: 2, liveLeases: 2, activeRuns: 0 }]]));
  });
});
