import { randomUUID } from 'node:crypto';
import { SystemClock, type LocalNotifier } from '@baton/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLiveServer, type LiveServer } from '../support/live-server';
import { createClient, type WatchEvent } from '@baton-coordination/runtime';

let server: LiveServer;

beforeAll(async () => {
  server = await startLiveServer({ clock: new SystemClock(), plan: 'TEAM', name: 'watch-e2e' });
});
afterAll(async () => server?.close());

describe('client.watch against a live server', () => {
  it('yields matching events as they commit, and a new watch resumes from the saved cursor', async () => {
    const client = createClient({ baseUrl: server.baseUrl, apiKey: server.apiKey, spaceId: server.spaceId, timeoutMs: 5_000, retry: { baseDelayMs: 10, maxDelayMs: 50 } });
    const scopeId = randomUUID();
    const barrier = await client.createBarrier({ scopeId, target: 3 });
    await client.createBarrier({ scopeId: randomUUID(), target: 1 });

    const stop = new AbortController();
    let saved: string | undefined;
    const seen: WatchEvent[] = [];
    const watch = client.watch({ scopeId, types: 'barrier.*', waitSeconds: 5, signal: stop.signal, onCursor: (c) => (saved = c) });
    const following = (async () => {
      for await (const e of watch) {
        seen.push(e);
        if (seen.length === 2) stop.abort();
      }
    })();
    // The second event commits while the watch is parked on the server.
    await new Promise((r) => setTimeout(r, 100));
    await client.arrive(barrier.id, { arrivalKey: 'w1' });
    await following;
    expect(seen.map((e) => [e.type, e.aggregate.id])).toEqual([['barrier.created', barrier.id], ['barrier.arrived', barrier.id]]);
    expect(saved).toBe(seen[1]!.eventId);
    expect(watch.cursor).toBe(saved);

    // A restart: a new watch from the saved cursor sees only what came after.
    await client.arrive(barrier.id, { arrivalKey: 'w2' });
    const again = new AbortController();
    for await (const e of client.watch({ scopeId, cursor: saved, waitSeconds: 5, signal: again.signal })) {
      expect(e).toMatchObject({ type: 'barrier.arrived', data: { arrivalKey: 'w2' } });
      again.abort();
    }
  });

  it('a watch the client abandons releases its hold on the server', async () => {
    const client = createClient({ baseUrl: server.baseUrl, apiKey: server.apiKey, spaceId: server.spaceId, timeoutMs: 5_000 });
    const notifier = server.baton.deps.notifier as LocalNotifier;
    const stop = new AbortController();
    const following = (async () => {
      for await (const _ of client.watch({ scopeId: randomUUID(), waitSeconds: 30, signal: stop.signal })) throw new Error('nothing matches');
    })();
    await expect.poll(() => notifier.parked, { timeout: 5_000, interval: 5 }).toBeGreaterThan(0);
    // Aborting closes the HTTP connection mid-wait: the server sees the response close unwritten.
    stop.abort();
    await following;
    await expect.poll(() => notifier.parked, { timeout: 5_000, interval: 5 }).toBe(0);
  });
});
