import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { CandidateRequest, DeliveryRequirements, Mailbox, NewMessage, Task } from '@baton/core';
import { storeTargets, useTenantStore } from './support/databases';

const T0 = 1_700_000_000_000;
const needs: DeliveryRequirements = { pools: [{ id: randomUUID(), name: 'gpu', units: 1 }], quotas: [], budgets: [], workLimit: null };

/**
 * A claim statement locks its candidates with FOR UPDATE SKIP LOCKED, which answers a row as it
 * is when locked: a change committed after the statement's snapshot was taken is re-read there.
 * Any other read of the row in the same statement sees the snapshot, from before that change. A
 * candidate with requirements is only locked, and core claims it from what the statement
 * answered; from the snapshot's row it would write an attempt count (or any field) that another
 * claim and nack had already moved past. Only real PostgreSQL runs a change between one
 * statement's snapshot and its lock, so this races a writer against the claim many times.
 */
describe.each(storeTargets().filter((t) => t.concurrentTransactions))('claim statements on $name answer a locked candidate as locked', (target) => {
  const tenant = useTenantStore(target, T0);

  async function needyDelivery(): Promise<{ box: Mailbox; scopeId: string; messageId: string }> {
    const { store, spaceId } = tenant;
    const scopeId = randomUUID();
    const box: Mailbox = { id: randomUUID(), spaceId, name: `box-${randomUUID()}`, mode: 'WORK', recipientId: null, backlogLimit: 1000, createdAt: T0, updatedAt: T0 };
    const taskId = randomUUID();
    const task: Task = {
      id: taskId, spaceId, taskKey: `k-${taskId}`, fingerprint: 'f'.repeat(64), mailboxId: box.id, scopeId, state: 'PENDING', input: null,
      requirements: { pools: [], quotas: [], budgets: [] }, workLimit: null, deadline: null, attempts: 0, outcome: null, failureReason: null, messageId: null, groupId: null, tombstoned: false, createdAt: T0, updatedAt: T0,
    };
    const message: NewMessage = {
      id: randomUUID(), spaceId, mailboxId: box.id, scopeId, payload: null, workKey: null, deadline: null, taskId, requirements: needs, claimed: null, state: 'READY', attempt: 0,
      tokenHash: null, holder: null, holderSession: null, leaseExpiresAt: null, result: null, createdAt: T0, updatedAt: T0,
    };
    await store.transaction(async (tx) => {
      await tx.mailboxes.insert(box);
      await tx.tasks.insert(task);
      await tx.messages.insert(message);
    });
    return { box, scopeId, messageId: message.id };
  }

  /** Touches the READY row over and over until stopped, each change committed on its own. */
  async function touchUntil(messageId: string, stopped: () => boolean): Promise<number> {
    let touches = 0;
    while (!stopped()) {
      await tenant.store.transaction(async (tx) => {
        const m = (await tx.messages.get(tenant.spaceId, messageId, { forUpdate: true }))!;
        await tx.messages.update({ ...m, updatedAt: m.updatedAt + 1 });
      });
      touches++;
    }
    return touches;
  }

  it.each(['claimCandidate', 'claimCandidates'] as const)('%s answers the row it locked, not the statement snapshot\'s, while another writer commits changes', async (claim) => {
    const { store, spaceId } = tenant;
    const { box, scopeId, messageId } = await needyDelivery();
    const request: CandidateRequest = {
      spaceId, mailboxId: box.id, scopeIds: [scopeId], holder: 'h', holderSession: 's', tokenHash: randomUUID(), leaseExpiresAt: T0 + 30_000, nowMs: T0, afterSeq: 0,
    };
    let stop = false;
    const toucher = touchUntil(messageId, () => stop);
    let stale = 0;
    let locked = 0;
    for (let i = 0; i < 1000; i++) {
      await store.transaction(async (tx) => {
        const answered = claim === 'claimCandidate' ? await tx.messages.claimCandidate(request) : (await tx.messages.claimCandidates({ ...request, tokenHashes: ['t1', 't2'] }))[0];
        if (!answered) return; // the toucher held it: passed over
        expect(answered.claimed).toBe(false);
        locked++;
        // Under this transaction's lock the row cannot have moved since the claim locked it.
        const current = (await tx.messages.get(spaceId, messageId))!;
        if (answered.message.updatedAt !== current.updatedAt) stale++;
      });
    }
    stop = true;
    const touches = await toucher;
    expect(touches).toBeGreaterThan(100);
    expect(locked).toBeGreaterThan(100);
    expect(stale).toBe(0);
  });
});
