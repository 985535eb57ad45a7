import type { Store } from '@baton/core';
import { openStore } from '@baton-coordination/server';
import { afterEach, describe, expect, it } from 'vitest';
import type { HttpRequest } from './http';
import { SimRandom } from './rng';
import { Scheduler } from './scheduler';
import { ServerHost } from './server-host';

/** Well formed (server/src/host/secrets.ts), so the server looks it up in the store; known to none. */
const unknownKey = `bk_${'0'.repeat(32)}_${'A'.repeat(43)}`;

/** A store that works until `broken` is set, then fails every operation with an error no route expects. */
function breakable(inner: Store): { store: Store; broken: { now: boolean } } {
  const broken = { now: false };
  const fail = (): never => {
    throw new Error('planted: the store broke');
  };
  const store = new Proxy(inner, {
    get(target, name, receiver) {
      if (broken.now && (name === 'transaction' || name === 'read')) return fail;
      return Reflect.get(target, name, receiver) as unknown;
    },
  });
  return { store, broken };
}

const tasksOfSomeSpace: HttpRequest = { method: 'GET', path: '/v1/spaces/00000000-0000-4000-8000-000000000000/tasks', headers: { authorization: `Bearer ${unknownKey}` } };

describe('ServerHost', () => {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  /** A started host on `store`, and the causes it reports. */
  async function hostOn(store: Store): Promise<{ host: ServerHost; causes: string[] }> {
    const causes: string[] = [];
    const host = new ServerHost(store, new Scheduler(Date.UTC(2026, 0, 1)), new SimRandom('host'), undefined, {}, (cause) => causes.push(cause));
    await host.start();
    return { host, causes };
  }

  it('reports the cause of a 500, which the reply does not name', async () => {
    const memory = await openStore({ kind: 'memory' });
    closers.push(() => memory.close());
    const { store, broken } = breakable(memory);
    const { host, causes } = await hostOn(store);
    broken.now = true;
    const reply = await host.handle(tasksOfSomeSpace);
    expect(reply?.statusCode).toBe(500);
    expect(JSON.stringify(reply?.body)).not.toContain('planted');
    expect(causes).toEqual([expect.stringMatching(/^server: request \S+ failed unexpectedly: Error: planted: the store broke \(at /)]);
  });

  it('reports nothing for a request answered without an unexpected error', async () => {
    const memory = await openStore({ kind: 'memory' });
    closers.push(() => memory.close());
    const { host, causes } = await hostOn(memory);
    const reply = await host.handle(tasksOfSomeSpace);
    expect(reply?.statusCode).toBe(401);
    expect(causes).toEqual([]);
  });
});
