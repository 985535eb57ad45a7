import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { MemoryStore, SeededRandom, SystemClock, type LocalNotifier } from '@baton/core';
import { createBaton } from '@baton-coordination/server/host/baton';
import { DrainController } from '@baton-coordination/server/http/deps';

/** SIGTERM's drain on a listening server: clients that hold connections open must not hold it. */
describe('draining a listening server', () => {
  const adminToken = 'drain-admin';
  const start = async () => {
    const baton = await createBaton({ store: new MemoryStore(), clock: new SystemClock(), random: new SeededRandom(3), adminToken });
    await baton.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (baton.app.server.address() as { port: number }).port;
    const admin = async (url: string, body: object) =>
      (await baton.app.inject({ method: 'POST', url: `/admin/v1${url}`, headers: { authorization: `Bearer ${adminToken}` }, payload: body })).json();
    const org = await admin('/orgs', { name: 'acme', plan: 'TEAM' });
    const space = await admin(`/orgs/${org.id}/spaces`, { name: 'main' });
    const key = (await admin(`/orgs/${org.id}/keys`, { name: 'k' })).secret as string;
    return { baton, port, base: `http://127.0.0.1:${port}/v1/spaces/${space.id}`, key };
  };
  const socket = async (port: number, send?: string): Promise<Socket> => {
    const s = connect(port, '127.0.0.1');
    await new Promise((resolve) => s.once('connect', resolve));
    s.on('error', () => undefined);
    if (send) s.write(send);
    return s;
  };

  it('answers a call that reaches it once draining has begun with 503 UNAVAILABLE and Retry-After (was served as usual); health checks still answer', async () => {
    const { baton, key, base } = await start();
    const spaceUrl = new URL(base).pathname;
    // The drain's first step, alone: the app is not closed yet, so inject still reaches it, as a
    // call on a connection still open would.
    (baton.deps.drain as DrainController).start();
    const reply = await baton.app.inject({ method: 'GET', url: `${spaceUrl}/mailboxes`, headers: { authorization: `Bearer ${key}` } });
    expect(reply.statusCode).toBe(503);
    expect(reply.headers['retry-after']).toBe('1');
    expect(reply.json().error).toMatchObject({ code: 'UNAVAILABLE', requestId: reply.headers['x-request-id'] });
    expect((await baton.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    const ready = await baton.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({ status: 'draining' });
    await baton.drainAndClose();
  });

  it('ends at once although a client holds a connection it never used and another sends half a request', async () => {
    const { baton, port } = await start();
    const sockets = [await socket(port), await socket(port, 'POST /healthz HTTP/1.1\r\nHost: x\r\n')];
    const t0 = performance.now();
    await baton.drainAndClose();
    expect(performance.now() - t0).toBeLessThan(2_000);
    for (const s of sockets) s.destroy();
  });

  it('lets a long poll in flight answer (204, at once) before it closes the connections', async () => {
    const { baton, base, key } = await start();
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'mk' };
    const box = (await (await fetch(`${base}/mailboxes`, { method: 'POST', headers, body: JSON.stringify({ name: 'drain' }) })).json()) as { id: string };
    const poll = fetch(`${base}/mailboxes/${box.id}/recv`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ scopeId: '11111111-1111-4111-8111-111111111111', holder: 'w', holderSession: 's', waitMs: 20_000 }),
    });
    await expect.poll(() => (baton.deps.notifier as LocalNotifier).parked, { timeout: 5_000, interval: 10 }).toBeGreaterThan(0);
    const t0 = performance.now();
    const [reply] = await Promise.all([poll, baton.drainAndClose()]);
    expect(reply.status).toBe(204);
    expect(performance.now() - t0).toBeLessThan(2_000);
  });
});
