import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { allowances, barriers, defaultSpaceLimits, messages, pools, schemas, SeededRandom, tasks, type OpContext, type Tx } from '@baton/core';
import { storeTargets, useTenantStore } from './support/databases';

/**
 * The diagnostics repository (core/src/diagnostics/repository.ts) on every store: the memory
 * store (the reference), PGlite and PostgreSQL answer alike, caps included. State is made
 * through the core services, as an operation makes it. Companion of test/store-conformance.test.ts;
 * the views over HTTP are test/http/diagnostics.test.ts.
 */

const T0 = 1_700_000_000_000;
const scopeId = '11111111-1111-4111-8111-111111111111';

describe.each(storeTargets())('diagnostics store conformance on $name', (target) => {
  const tenant = useTenantStore(target, T0);
  const random = new SeededRandom(7);

  /** One operation at `nowMs`, in one transaction, as the HTTP layer runs it. */
  const op = <T>(nowMs: number, work: (ctx: OpContext) => Promise<T>): Promise<T> =>
    tenant.store.transaction((tx: Tx) => work({ tx, spaceId: tenant.spaceId, nowMs, random, limits: defaultSpaceLimits }));
  const read = <T>(work: (tx: Tx) => Promise<T>): Promise<T> => tenant.store.read(work);
  const mailbox = (name: string) => op(T0, async (ctx) => (await messages.createMailbox(ctx, schemas.mailboxCreateBody.parse({ name }), true)).view.id);
  const send = (mailboxId: string, nowMs: number) => op(nowMs, async (ctx) => (await messages.send(ctx, mailboxId, schemas.sendBody.parse({ scopeId, payload: { at: nowMs } }))).view.id);

  it('census counts each type by state, and stops each at the cap', async () => {
    const { spaceId } = tenant;
    const box = await mailbox('box');
    for (let i = 0; i < 5; i++) await send(box, T0 + i);
    const counts = await read((tx) => tx.diagnostics.census(spaceId, 100));
    expect(counts.filter((c) => c.type === 'messages' || c.type === 'mailboxes').sort((a, b) => a.type.localeCompare(b.type))).toEqual([
      { type: 'mailboxes', state: null, count: 1 },
      { type: 'messages', state: 'READY', count: 5 },
    ]);
    // Nothing else exists, and no count is 0.
    expect(counts).toHaveLength(2);
    const capped = await read((tx) => tx.diagnostics.census(spaceId, 3));
    expect(capped.filter((c) => c.type === 'messages')).toEqual([{ type: 'messages', state: 'READY', count: 3 }]);
  });

  it('backlog pages mailboxes by name with READY, CLAIMED, DEAD and the oldest READY, each count capped', async () => {
    const { spaceId } = tenant;
    const a = await mailbox('a');
    await mailbox('b');
    for (let i = 0; i < 3; i++) await send(a, T0 + 1_000 * (i + 1));
    const all = await read((tx) => tx.diagnostics.backlog(spaceId, null, 10, 100));
    expect(all).toEqual([
      { spaceId, mailboxId: a, mailboxName: 'a', ready: 3, claimed: 0, dead: 0, oldestReadyAt: T0 + 1_000 },
      { spaceId, mailboxId: expect.any(String), mailboxName: 'b', ready: 0, claimed: 0, dead: 0, oldestReadyAt: null },
    ]);
    expect((await read((tx) => tx.diagnostics.backlog(spaceId, 'a', 10, 100))).map((c) => c.mailboxName)).toEqual(['b']);
    expect((await read((tx) => tx.diagnostics.backlog(spaceId, null, 1, 100))).map((c) => c.mailboxName)).toEqual(['a']);
    const [capped] = await read((tx) => tx.diagnostics.backlog(spaceId, null, 1, 2));
    expect(capped!.ready + capped!.claimed).toBe(2);
  });

  it('waitLines reads lines in line order up to the cap; allowancesWithWaiters finds the queued ones', async () => {
    const { spaceId } = tenant;
    const [queued, idle] = await op(T0, async (ctx) => [
      (await allowances.createAllowance(ctx, schemas.allowanceCreateBody.parse({ name: 'q', unitsLimit: 1, windowSeconds: 3600 }), true)).view.id,
      (await allowances.createAllowance(ctx, schemas.allowanceCreateBody.parse({ name: 'idle', unitsLimit: 1, windowSeconds: 3600 }), true)).view.id,
    ]);
    await op(T0, (ctx) => allowances.consume(ctx, queued, schemas.consumeBody.parse({ scopeId, units: 1, holder: 'h' })));
    for (let i = 0; i < 3; i++) await op(T0 + 1_000 * (i + 1), (ctx) => allowances.wait(ctx, queued, schemas.waitBody.parse({ scopeId, units: 1, holder: `w${i}`, ttlSeconds: 3600 })));
    expect(await read((tx) => tx.diagnostics.waitLines(spaceId, 100))).toEqual([{ spaceId, allowanceId: queued, allowanceName: 'q', waiting: 3, oldestWaitingAt: T0 + 1_000 }]);
    expect(await read((tx) => tx.diagnostics.waitLines(spaceId, 2))).toEqual([{ spaceId, allowanceId: queued, allowanceName: 'q', waiting: 2, oldestWaitingAt: T0 + 1_000 }]);
    expect(await read((tx) => tx.diagnostics.allowancesWithWaiters(spaceId, [queued, idle]))).toEqual([queued]);
  });

  it('waitingBarriers lists WAITING barriers oldest first with the arrival keys of their epoch, in key order, up to the limit', async () => {
    const { spaceId } = tenant;
    const waiting = await op(T0, (ctx) => barriers.createBarrier(ctx, schemas.barrierCreateBody.parse({ scopeId, target: 3 })));
    const done = await op(T0 + 1, (ctx) => barriers.createBarrier(ctx, schemas.barrierCreateBody.parse({ scopeId, target: 1 })));
    await op(T0 + 2, (ctx) => barriers.arrive(ctx, waiting.id, { arrivalKey: 'zeta' }));
    await op(T0 + 3, (ctx) => barriers.arrive(ctx, waiting.id, { arrivalKey: 'alpha' }));
    await op(T0 + 4, (ctx) => barriers.arrive(ctx, done.id, { arrivalKey: 'only' }));
    const base = { id: waiting.id, scopeId, epoch: 1, target: 3, arrivals: 2, createdAt: T0 };
    expect(await read((tx) => tx.diagnostics.waitingBarriers(spaceId, 10, 10))).toEqual([{ ...base, arrivalKeys: ['alpha', 'zeta'] }]);
    expect(await read((tx) => tx.diagnostics.waitingBarriers(spaceId, 10, 1))).toEqual([{ ...base, arrivalKeys: ['alpha'] }]);
  });

  it('gated deliveries, summaries by id, a scope\'s tasks in order, and the run counts', async () => {
    const { spaceId } = tenant;
    const box = await mailbox('work');
    await op(T0, (ctx) => pools.createPool(ctx, schemas.poolCreateBody.parse({ name: 'gpu', capacity: 1 }), true));
    const submit = (taskKey: string, nowMs: number, gated: boolean, scope = scopeId) =>
      op(nowMs, async (ctx) => (await tasks.submit(ctx, schemas.taskSubmitBody.parse({ scopeId: scope, mailboxId: box, taskKey, ...(gated ? { requirements: { pools: [{ name: 'gpu', units: 1 }] } } : {}) }))).task.id);
    const first = await submit('first', T0 + 1, true);
    const plain = await submit('plain', T0 + 2, false);
    const second = await submit('second', T0 + 3, true);
    await submit('elsewhere', T0 + 4, true, randomUUID());

    const gated = await read((tx) => tx.diagnostics.gatedDeliveries(spaceId, 2));
    expect(gated.map((d) => d.taskId)).toEqual([first, second]);
    expect(gated[0]).toMatchObject({ state: 'READY', attempt: 0, holder: null, leaseExpiresAt: null, requirements: { pools: [{ name: 'gpu', units: 1 }] } });

    const summaries = await read((tx) => tx.diagnostics.taskSummaries(spaceId, [plain, randomUUID()]));
    expect(summaries).toEqual([{ id: plain, taskKey: 'plain', state: 'PENDING', mailboxId: box, scopeId, messageId: expect.any(String), createdAt: T0 + 2 }]);
    const deliveries = await read((tx) => tx.diagnostics.deliveries(spaceId, [summaries[0]!.messageId!, randomUUID()]));
    expect(deliveries).toEqual([expect.objectContaining({ messageId: summaries[0]!.messageId, taskId: plain, state: 'READY', requirements: null })]);

    const page = await read((tx) => tx.diagnostics.scopeTasks(spaceId, scopeId, null, 2));
    expect(page.map((t) => t.id)).toEqual([first, plain]);
    const rest = await read((tx) => tx.diagnostics.scopeTasks(spaceId, scopeId, { createdAt: page[1]!.createdAt, id: page[1]!.id }, 2));
    expect(rest.map((t) => t.id)).toEqual([second]);

    expect(await read((tx) => tx.diagnostics.runCounts(spaceId, scopeId, 100))).toEqual([{ type: 'tasks', state: 'PENDING', count: 3 }]);
    expect(await read((tx) => tx.diagnostics.runCounts(spaceId, scopeId, 2))).toEqual([{ type: 'tasks', state: 'PENDING', count: 2 }]);
    expect(await read((tx) => tx.diagnostics.runCounts(spaceId, randomUUID(), 100))).toEqual([]);
  });
});
