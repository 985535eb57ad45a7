import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalNotifier } from '@baton/core';
import { storeTargets } from '../support/databases';
import { idem, startTestServer, type TestServer } from '../support/server';

const scopeId = '11111111-1111-4111-8111-111111111111';
const unknownId = '22222222-2222-4222-8222-222222222222';

/** GET /tasks/{id}?waitMs=: a long poll woken by the commit that ends the task (docs/api.md, Tasks). */
describe.each(storeTargets())('awaiting a task over HTTP on $name', (target) => {
  let server: TestServer;
  let close: () => Promise<void>;
  let box: string;

  beforeAll(async () => {
    const opened = await target.open();
    server = await startTestServer(opened.store);
    close = async () => {
      await server.close();
      await opened.close();
    };
    box = (await server.api('POST', '/mailboxes', { body: { name: 'await-box' }, idem: idem() })).body.id;
  });
  afterAll(async () => close());

  let counter = 0;
  const submit = async (): Promise<string> => (await server.api('POST', '/tasks', { body: { scopeId, mailboxId: box, taskKey: `await-${++counter}`, input: { n: counter } }, idem: idem() })).body.taskId;
  const parked = async (): Promise<void> => {
    const notifier = server.baton.deps.notifier as LocalNotifier;
    await expect.poll(() => notifier.parked, { timeout: 5_000, interval: 5 }).toBeGreaterThan(0);
  };
  const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

  it('holds the reply while the task runs and answers with the outcome once it is completed', async () => {
    const taskId = await submit();
    const poll = server.api('GET', `/tasks/${taskId}?waitMs=20000`);
    let answered = false;
    void poll.then(() => (answered = true));
    await parked();
    const delivery = (await server.api('POST', `/mailboxes/${box}/recv`, { body: { scopeId, holder: 'worker', holderSession: 's1' } })).body;
    // RUNNING is not a final state: the poll stays parked.
    await settle();
    expect(answered).toBe(false);
    await server.api('POST', `/messages/${delivery.messageId}/complete`, { body: { token: delivery.token, result: { payload: { answer: 42 } } } });
    const res = await poll;
    expect(res.statusCode).toBe(200);
    expect(res.body).toMatchObject({ id: taskId, state: 'SUCCEEDED', outcome: { answer: 42 } });
  });

  it('a cancel ends the wait with CANCELLED', async () => {
    const taskId = await submit();
    const poll = server.api('GET', `/tasks/${taskId}?waitMs=20000`);
    await parked();
    expect((await server.api('POST', `/tasks/${taskId}/cancel`, { body: { reason: 'withdrawn' } })).statusCode).toBe(200);
    expect((await poll).body).toMatchObject({ id: taskId, state: 'CANCELLED' });
  });

  it('answers a final task at once, and a pending one when the wait runs out on the clock (capped at 30 s)', async () => {
    const cancelled = await submit();
    await server.api('POST', `/tasks/${cancelled}/cancel`, { body: {} });
    expect((await server.api('GET', `/tasks/${cancelled}?waitMs=30000`)).body).toMatchObject({ state: 'CANCELLED' });

    const taskId = await submit();
    const capped = server.api('GET', `/tasks/${taskId}?waitMs=120000`);
    let answered = false;
    void capped.then(() => (answered = true));
    await parked();
    server.clock.advance(29_999);
    await settle();
    expect(answered).toBe(false);
    server.clock.advance(1);
    const res = await capped;
    expect(res.statusCode).toBe(200);
    expect(res.body).toMatchObject({ id: taskId, state: 'PENDING' });
    await server.api('POST', `/tasks/${taskId}/cancel`, { body: {} });
  });

  it('an unknown id is NOT_FOUND at once; a malformed waitMs is VALIDATION_FAILED on the querystring', async () => {
    expect((await server.api('GET', `/tasks/${unknownId}?waitMs=20000`)).body.error.code).toBe('NOT_FOUND');
    const taskId = await submit();
    for (const query of ['waitMs=-1', 'waitMs=120001', 'waitMs=1.5', 'waitMs=soon']) {
      const res = await server.api('GET', `/tasks/${taskId}?${query}`);
      expect(res.statusCode).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(res.body.error.details[0].path).toMatch(/^querystring\./);
    }
    await server.api('POST', `/tasks/${taskId}/cancel`, { body: {} });
  });
});
