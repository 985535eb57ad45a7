import { MemoryStore } from '@baton/core';
import { namedRoutes, policyOf, spacePrefix } from '@baton-coordination/server/limits/route-policy';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server';

/** The limits' route table (server/src/limits/route-policy.ts) names real routes, and the recovery calls are the ones docs/design/0016-limits-and-retry-after.md lists. */
describe('the route policy of the limits', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(new MemoryStore());
  });
  afterAll(async () => server.close());

  it('names only routes the app has', () => {
    for (const route of namedRoutes()) {
      const [method, path] = route.split(' ') as ['POST', string];
      expect({ route, exists: server.baton.app.hasRoute({ method, url: `${spacePrefix}${path}` }) }).toEqual({ route, exists: true });
    }
  });

  it('lets recovery calls (renew, complete, nack, cancel, detach, void, waiter cancel, claim release and their batches) use the whole rate', () => {
    const recovery = namedRoutes().filter((r) => policyOf(r.split(' ')[0]!, r.split(' ')[1]!).recovery).map((r) => r.split('/').at(-1));
    expect(new Set(recovery)).toEqual(new Set(['renew', 'complete', 'nack', 'renew-batch', 'complete-batch', 'nack-batch', 'cancel', 'detach', 'void', 'release']));
    expect(policyOf('POST', `${spacePrefix}/tasks`)).toMatchObject({ recovery: false, read: false, createsTasks: true });
    expect(policyOf('GET', `${spacePrefix}/tasks/:id`)).toMatchObject({ recovery: false, read: true });
    expect(policyOf('POST', `${spacePrefix}/budgets/:id/reserve`)).toMatchObject({ recovery: false, read: false });
  });
});
