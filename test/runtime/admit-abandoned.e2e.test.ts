import { randomUUID } from 'node:crypto';
import { SystemClock } from '@baton/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startLiveServer, type LiveServer } from '../support/live-server';
import { createClient } from '@baton-coordination/runtime';

/**
 * An admit long poll whose client went away (a worker's stop aborts it) claims nothing after:
 * before, the server kept it parked and claimed the next task for nobody, which then sat RUNNING
 * until its lease ran out (seen as a 30 s stall of the README's producer after a worker stopped).
 */

let server: LiveServer;
beforeAll(async () => {
  server = await startLiveServer({ clock: new SystemClock(), plan: 'ENTERPRISE', name: 'admit-abandoned' });
});
afterAll(async () => server?.close());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

it('a task submitted after a worker abandoned its admit long poll stays PENDING for the next worker', async () => {
  const client = createClient({ baseUrl: server.baseUrl, apiKey: server.apiKey, spaceId: server.spaceId });
  const { id: mailboxId } = await client.createMailbox({ name: 'abandoned' });
  const scopeId = randomUUID();
  const admitBody = () => ({ scopeId, mailboxId, holder: 'h', holderSession: randomUUID(), leaseSeconds: 30, waitMs: 20_000 });

  const gone = new AbortController();
  const abandoned = client.admit(admitBody(), { signal: gone.signal }).catch((error: unknown) => error);
  await sleep(300);
  gone.abort();
  await abandoned;
  await sleep(300);

  const { taskId } = await client.submitTask({ scopeId, mailboxId, taskKey: 'after-abort' });
  await sleep(500);
  expect((await client.getTask(taskId)).state).toBe('PENDING');
  const next = await client.admit({ ...admitBody(), waitMs: 5_000 });
  expect(next?.taskId).toBe(taskId);
}, 60_000);
