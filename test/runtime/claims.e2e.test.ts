import { randomUUID } from 'node:crypto';
import { SystemClock } from '@baton/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLiveServer, type LiveServer } from '../support/live-server';
import { armTimer, ClaimHeldError, createClient, firedTimerIdOf, sleepUntil, withChildRun, withClaim, type BatonClient, type ClaimEvent } from '@baton-coordination/runtime';

/**
 * withClaim, armTimer and withChildRun against a live server on embedded PGlite, on the system
 * clock, with the background sweep running (it fires the timers, about once a second).
 */

let server: LiveServer;
let client: BatonClient;

beforeAll(async () => {
  server = await startLiveServer({ clock: new SystemClock(), plan: 'TEAM', name: 'claims-e2e' });
  server.baton.background.start();
  client = createClient({ baseUrl: server.baseUrl, apiKey: server.apiKey, spaceId: server.spaceId, timeoutMs: 5_000, retry: { baseDelayMs: 10, maxDelayMs: 50 } });
});

afterAll(async () => server?.close());

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('claims, timers and runs against a live server', () => {
  it('holds a key for one holder at a time, renews it, and hands out growing fencing tokens', async () => {
    const claimKey = `deploy/${randomUUID()}`;
    const scopeId = randomUUID();
    const eventsA: ClaimEvent[] = [];
    const eventsB: ClaimEvent[] = [];
    let second: Promise<number> | undefined;

    const tokenA = await withClaim(client, { claimKey, scopeId, holder: 'a', leaseSeconds: 5, onEvent: (e) => eventsA.push(e) }, async (claim) => {
      // Another holder is refused at once, with who holds the key and until when.
      const refused = await withClaim(client, { claimKey, scopeId, holder: 'b' }, async () => 'never').catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ClaimHeldError);
      expect(refused).toMatchObject({ code: 'CLAIM_HELD', holder: 'a', leaseExpiresAt: expect.any(String) });
      // A holder that waits gets it once this one releases.
      second = withClaim(client, { claimKey, scopeId, holder: 'b', waitMs: 15_000, pollMs: 100, onEvent: (e) => eventsB.push(e) }, async (next) => next.fencingToken);
      // Past a third of the 5 s lease: one renew has happened.
      await sleep(2_200);
      expect(claim.isHeld()).toBe(true);
      expect(claim.signal.aborted).toBe(false);
      return claim.fencingToken;
    });

    expect(eventsA.map((e) => e.type)).toEqual(['acquired', 'renewed', 'released']);
    const tokenB = await second!;
    expect(tokenB).toBeGreaterThan(tokenA);
    expect(eventsB.map((e) => e.type)).toContain('held_elsewhere');
    expect(eventsB.at(-1)).toMatchObject({ type: 'released' });

    const page = await client.listClaims({ claimKey });
    expect(page.items.map((c) => [c.holder, c.state, c.fencingToken])).toEqual([
      ['a', 'RELEASED', tokenA],
      ['b', 'RELEASED', tokenB],
    ]);
  });

  it('fires a timer armed 200 ms ahead into a mailbox, where recv receives it', async () => {
    const scopeId = randomUUID();
    const mailbox = await client.createMailbox({ name: `timers-${randomUUID().slice(0, 8)}` });
    const timer = await armTimer(client, { timerKey: `check-${randomUUID()}`, scopeId, mailboxId: mailbox.id, payload: { check: 'heartbeat' }, delayMs: 200 });
    expect(timer).toMatchObject({ state: 'ARMED', mailboxId: mailbox.id });

    const delivery = await client.recv(mailbox.id, { scopeId, holder: 'timer-worker', holderSession: randomUUID(), waitMs: 10_000 });
    expect(delivery).toMatchObject({ scopeId, payload: { check: 'heartbeat' } });
    const fired = await client.getTimer(timer.id);
    expect(fired).toMatchObject({ state: 'FIRED', firedMessageId: delivery!.messageId });
    const [message] = (await client.listMessages(mailbox.id)).items;
    expect(firedTimerIdOf(message!)).toBe(timer.id);
    await client.complete(delivery!.messageId, { token: delivery!.token });
  });

  it('completes a child run when fn resolves and cancels it when fn throws', async () => {
    const parent = await client.createRun({ name: 'parent' });
    const done = await withChildRun(client, parent.scopeId, async (scopeId) => scopeId, { name: 'ok-child' });
    const boom = new Error('agent went astray');
    let failedScopeId = '';
    const error = await withChildRun(client, parent.scopeId, async (scopeId) => {
      failedScopeId = scopeId;
      await client.submitTask({ scopeId, mailboxId: (await client.createMailbox({ name: `runs-${randomUUID().slice(0, 8)}` })).id, taskKey: 'doomed' });
      throw boom;
    }).catch((e: unknown) => e);
    expect(error).toBe(boom);

    expect((await client.getRun(done)).state).toBe('COMPLETED');
    const failed = await client.getRun(failedScopeId);
    expect(failed).toMatchObject({ state: 'CANCELLED', parentScopeId: parent.scopeId });
    const [task] = (await client.listTasks({ scopeId: failedScopeId })).items;
    expect(task).toMatchObject({ state: 'CANCELLED' });
    expect((await client.getRun(parent.scopeId)).childRuns.items.map((r) => r.scopeId).sort()).toEqual([done, failedScopeId].sort());
  });
  it('sleepUntil arms a timer in a scope of its own, wakes with its payload when it fires, and leaves other messages of the mailbox alone', async () => {
    const mailbox = await client.createMailbox({ name: `sleeps-${randomUUID().slice(0, 8)}` });
    const other = await client.send(mailbox.id, { scopeId: randomUUID(), payload: 'not mine' });
    const started = Date.now();
    const payload = await sleepUntil(client, { timerKey: `sleep-${randomUUID()}`, scopeId: randomUUID(), mailboxId: mailbox.id, payload: { wake: 'up' }, delayMs: 1_000, holder: 'sleeper' });
    expect(payload).toEqual({ wake: 'up' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    const left = await client.listMessages(mailbox.id, { state: ['READY'] });
    expect(left.items.map((m) => m.id)).toEqual([other.id]);
  }, 20_000);
});
