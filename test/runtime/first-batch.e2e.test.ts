import { randomUUID } from 'node:crypto';
import { SystemClock } from '@baton/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startLiveServer, type LiveServer } from '../support/live-server';
import { createClient, createWorker, fetchTransport, silentLogger, submitMany, type Transport, type Worker } from '@baton-coordination/runtime';

/**
 * A newcomer's first batch (issue 29): 1,500 tasks through submitMany into a mailbox created
 * with the documented defaults (backlogLimit 1,000, and the space's maxBacklog 1,000) while workers
 * run. Before, 500 of them came back BACKLOG_FULL; now submitMany submits them again as the
 * workers make room, and every task is stored once and ends SUCCEEDED, its outcome awaited on
 * the server (GET /tasks/{id}?waitMs=). No request is answered 429.
 */

let server: LiveServer;
const workers: Worker[] = [];

beforeAll(async () => {
  server = await startLiveServer({ clock: new SystemClock(), plan: 'ENTERPRISE', name: 'first-batch' });
});

afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop({ deadlineMs: 0 })));
  await server?.close();
});

it('1,500 tasks submitted with submitMany into a default mailbox beside running workers are all stored once and all end SUCCEEDED', async () => {
  const statuses = new Map<number, number>();
  let submitBatches = 0;
  // The workers start once the first pass of submit-batches is answered, so the pass surely meets
  // a full mailbox (1,500 tasks, room for 1,000) and the refused ones must wait for room.
  const startWorkers = (): void => workers.forEach((worker) => worker.start());
  const counting: Transport = async (request) => {
    const response = await fetchTransport(request);
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    if (request.url.includes('/tasks/submit-batch') && ++submitBatches === 15) startWorkers();
    return response;
  };
  const client = createClient({ baseUrl: server.baseUrl, apiKey: server.apiKey, spaceId: server.spaceId, transport: counting });
  const mailbox = await client.createMailbox({ name: 'first-batch' });
  expect(mailbox.backlogLimit).toBe(1_000);
  const scopeId = randomUUID();
  for (let n = 0; n < 4; n++) {
    const worker = createWorker<{ n: number }, { n: number }>({
      client, mailboxId: mailbox.id, scopeId, holder: `worker-${n}`, concurrency: 25, leaseSeconds: 30, logger: silentLogger,
      handler: async ({ delivery }) => ({ n: delivery.input.n }),
    });
    workers.push(worker);
  }

  const count = 1_500;
  const results = await submitMany<{ n: number }>(client, Array.from({ length: count }, (_, n) => ({ scopeId, mailboxId: mailbox.id, taskKey: `first-${n}`, input: { n } })));
  const refused = results.filter((r) => !r.ok);
  expect(refused, JSON.stringify(refused.slice(0, 3))).toEqual([]);
  expect(submitBatches).toBeGreaterThan(15); // some tasks were refused for room and submitted again
  const taskIds = results.map((r) => (r.ok ? r.reply.taskId : ''));
  expect(new Set(taskIds).size).toBe(count);

  const outcomes: unknown[] = [];
  for (const taskId of taskIds) {
    const task = await client.getTask<{ n: number }, { n: number }>(taskId, { waitMs: 30_000 });
    expect(task.state).toBe('SUCCEEDED');
    outcomes.push(task.outcome?.n);
  }
  expect(outcomes).toEqual(Array.from({ length: count }, (_, n) => n));
  expect(statuses.get(429) ?? 0).toBe(0);
}, 180_000);
