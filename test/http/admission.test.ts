import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeTargets } from '../support/databases';
import { idem, startTestServer, type TestServer } from '../support/server';

const scopeId = '11111111-1111-4111-8111-111111111111';

describe.each(storeTargets())('admission over HTTP on $name', (target) => {
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
    box = (await server.api('POST', '/mailboxes', { body: { name: 'admit-box' }, idem: idem() })).body.id;
    await server.api('POST', '/pools', { body: { name: 'gpu', capacity: 2 }, idem: idem() });
    await server.api('POST', '/work-limits', { body: { name: 'wl', maxConcurrent: 3 }, idem: idem() });
    await server.api('POST', '/allowances', { body: { name: 'q', unitsLimit: 10, windowSeconds: 60 }, idem: idem() });
    await server.api('POST', '/budgets', { body: { name: 'spend', currency: 'USD', scale: 2, limitMinor: '10000' }, idem: idem() });
  });
  afterAll(async () => close());

  let counter = 0;
  const submit = (extra: Record<string, unknown> = {}) =>
    server.api('POST', '/tasks', { body: { scopeId, mailboxId: box, taskKey: `t-${++counter}`, input: { n: counter }, ...extra }, idem: idem() });
  const admit = (extra: Record<string, unknown> = {}) =>
    server.api('POST', '/tasks/admit', { body: { scopeId, mailboxId: box, holder: 'w', holderSession: 's', ...extra }, idem: idem() });
  const pool = async () => (await server.api('GET', '/pools')).body.items.find((p: { name: string }) => p.name === 'gpu');

  it('admits a delivery with all four kinds of resources, releases them on complete', async () => {
    const task = await submit({ requirements: { pools: [{ name: 'gpu', units: 2 }], quotas: [{ name: 'q', units: 3 }], budgets: [{ name: 'spend', reserveMinor: '500' }] }, workLimit: 'wl' });
    expect(task.statusCode).toBe(201);
    const got = await admit();
    expect(got.statusCode).toBe(200);
    expect(got.body).toMatchObject({ taskId: task.body.taskId, attempt: 1, claimed: { pools: [{ name: 'gpu', units: 2 }], quotas: [{ name: 'q', units: 3 }], workLimit: 'wl' } });
    expect(got.body.claimed.budgets[0]).toMatchObject({ name: 'spend', amountMinor: '500' });
    expect((await pool()).inUse).toBe(2);
    // A second task needing the pool is passed over: nothing admissible.
    const blocked = await submit({ requirements: { pools: [{ name: 'gpu', units: 1 }] } });
    expect((await admit()).statusCode).toBe(204);
    const done = await server.api('POST', `/messages/${got.body.messageId}/complete`, { body: { token: got.body.token } });
    expect(done.statusCode).toBe(200);
    expect((await pool()).inUse).toBe(0);
    const next = await admit();
    expect(next.body.taskId).toBe(blocked.body.taskId);
    const nacked = await server.api('POST', `/messages/${next.body.messageId}/nack`, { body: { token: next.body.token, retry: false } });
    expect(nacked.body.state).toBe('DEAD');
    expect((await pool()).inUse).toBe(0);
  });

  it('a long-polling admit wakes when pool units are released', async () => {
    await submit({ requirements: { pools: [{ name: 'gpu', units: 2 }] } });
    const first = await admit();
    expect(first.statusCode).toBe(200);
    const waiting = await submit({ requirements: { pools: [{ name: 'gpu', units: 1 }] } });
    const polled = admit({ waitMs: 20_000 });
    await new Promise((r) => setTimeout(r, 50));
    await server.api('POST', `/messages/${first.body.messageId}/complete`, { body: { token: first.body.token } });
    const woke = await polled;
    expect(woke.statusCode).toBe(200);
    expect(woke.body.taskId).toBe(waiting.body.taskId);
    await server.api('POST', `/messages/${woke.body.messageId}/complete`, { body: { token: woke.body.token } });
  });
});
