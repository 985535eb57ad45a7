import { monthOf, type Store } from '@baton/core';
import { LimitsAgent, type LimitedTenant } from './agents/limits-agent';
import { checkLimits, type Attempt } from './checks/limits';
import type { SimContext } from './context';
import { requestTimeoutMs, type Network } from './network';
import type { SimRandom } from './rng';
import { adminToken, type ServerHost } from './server-host';

const agentCount = 2;
const attemptsPerAgent = 25;
/** Free's operations per month (docs/api.md "Plans"). */
const freeOperations = 100_000;

/**
 * Limits under pressure (docs/design/0016-limits-and-retry-after.md), in one place so simulation.ts needs a line per phase: a
 * second organization on Free, its space's rate set low and its month's operations nearly used
 * (seeded straight into the store), and agents that call faster than either allows.
 */
export class LimitsWorkload {
  readonly attempts: Attempt[] = [];

  private constructor(
    private readonly sim: SimContext,
    private readonly tenant: LimitedTenant,
    private readonly perMinute: number,
    private readonly operationsLeft: number,
    setUpAtMs: number,
  ) {
    // The set-up's two calls (PUT /limits, the mailbox) count in the space's first minute too.
    for (const what of ['set-up PUT /limits', 'set-up mailbox']) this.attempts.push({ agent: 'operator', kind: 'work', what, sentAtMs: setUpAtMs, repliedAtMs: setUpAtMs, statusCode: 200 });
  }

  static async setUp(server: ServerHost, store: Store, sim: SimContext, rng: SimRandom): Promise<LimitsWorkload> {
    const admin = async (path: string, body: unknown): Promise<any> => must(await server.handle({ method: 'POST', path: `/admin/v1${path}`, headers: { authorization: `Bearer ${adminToken}` }, body }));
    const org = await admin('/orgs', { name: 'limited', plan: 'FREE' });
    const space = await admin(`/orgs/${org.id}/spaces`, { name: 'limited' });
    const key = (await admin(`/orgs/${org.id}/keys`, { name: 'limited' })).secret as string;
    const call = async (method: 'POST' | 'PUT', path: string, body: unknown): Promise<any> =>
      must(await server.handle({ method: method as 'POST', path: `/v1/spaces/${space.id}${path}`, headers: { authorization: `Bearer ${key}`, 'idempotency-key': `setup-${path}` }, body }));
    const perMinute = rng.int(8, 24);
    await call('PUT', '/limits', { requestsPerMinute: perMinute });
    const mailbox = await call('POST', '/mailboxes', { name: 'limited', mode: 'WORK', backlogLimit: 1_000 });
    // Fewer operations left than a third of the minute's ordinary share, so the month runs out while
    // the rate still lets work through: a stop that does not hold shows as work that succeeds.
    const left = rng.int(1, Math.max(1, Math.floor((perMinute * 0.8) / 3)));
    await store.transaction((tx) => tx.usage.addOperations(monthOf(sim.scheduler.now()), new Map([[org.id, freeOperations - left]])));
    // The first server learns the seeded count now, as a server that has run a while would have.
    await server.runDueWork();
    return new LimitsWorkload(sim, { spaceId: space.id, key, mailboxId: mailbox.id, scopeId: rng.uuid() }, perMinute, left, sim.scheduler.now());
  }

  get spaceId(): string {
    return this.tenant.spaceId;
  }

  /** `count`: how many limited agents (the seed's swarm weight, swarm.ts); two by default. */
  agents(network: Network, count = agentCount): LimitsAgent[] {
    return Array.from({ length: count }, (_, i) => new LimitsAgent(`limited${i}`, this.sim, this.tenant, this.attempts, network, attemptsPerAgent));
  }

  /**
   * `serverStartsMs`: when each server took its first request; the first learned the seeded count
   * at set-up. `duplicates`: whether the run's faults duplicated requests (each attempt may then be
   * counted twice).
   */
  check(serverStartsMs: readonly number[], duplicates: boolean): string[] {
    return checkLimits(this.attempts, {
      perMinute: this.perMinute,
      // network.ts: a delivery waits at most 20 + 3,000 ms, a duplicate twice that; a reply comes within the timeout.
      maxDeliveryMs: 2 * 3_020 + requestTimeoutMs,
      copiesPerAttempt: duplicates ? 2 : 1,
      // The first server synced at set-up; a restarted one syncs on the first 1 s tick after the tenant's first call reaches it.
      serverStartsMs: serverStartsMs.slice(1),
      syncedWithinMs: 3_020 + 1_000 + 500,
      operationsLeft: this.operationsLeft,
    });
  }
}

function must(reply: { statusCode: number; body: any } | undefined): any {
  if (!reply || reply.statusCode >= 300) throw new Error(`simulation set-up failed: ${JSON.stringify(reply)}`);
  return reply.body;
}
