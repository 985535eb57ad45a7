import { effectiveLimits, type Store } from '@baton/core';
import { LeaseAgent, maxLeaseSeconds, type CrowdedTenant } from './agents/lease-agent';
import { checkAgentsAtOnce } from './checks/agents-at-once';
import type { SimContext } from './context';
import type { Network } from './network';
import type { SimRandom } from './rng';
import { adminToken, type ServerHost } from './server-host';

const agentCount = 2;
const callsPerAgent = 25;
/** Free's agents at once (docs/api.md "Plans"). */
const agentsAtOnce = effectiveLimits({ plan: 'FREE', limits: null }).agentsAtOnce!;

/**
 * The plan's agents at once under batches (docs/design/0015-batches.md, docs/design/0016-limits-and-retry-after.md), in one place as limits.ts is for the
 * rate and the month: a third organization, on Free, whose agents claim by batch far more than its
 * 10 leases at once, on the main server. Its own streams (set-up, network, agents), so the rest of
 * the run draws as before; its steps are not among the run's --steps.
 */
export class LeaseWorkload {
  /** When each of the tenant's calls came back. */
  private readonly replies: number[] = [];
  private agentCount = 0;

  private constructor(
    private readonly sim: SimContext,
    private readonly orgId: string,
    private readonly tenant: CrowdedTenant,
  ) {}

  static async setUp(server: ServerHost, sim: SimContext, rng: SimRandom): Promise<LeaseWorkload> {
    const admin = async (path: string, body: unknown): Promise<any> => must(await server.handle({ method: 'POST', path: `/admin/v1${path}`, headers: { authorization: `Bearer ${adminToken}` }, body }));
    const org = await admin('/orgs', { name: 'crowded', plan: 'FREE' });
    const space = await admin(`/orgs/${org.id}/spaces`, { name: 'crowded' });
    const key = (await admin(`/orgs/${org.id}/keys`, { name: 'crowded' })).secret as string;
    const call = async (path: string, body: unknown): Promise<any> =>
      must(await server.handle({ method: 'POST', path: `/v1/spaces/${space.id}${path}`, headers: { authorization: `Bearer ${key}`, 'idempotency-key': `setup-${path}` }, body }));
    const mailbox = await call('/mailboxes', { name: 'crowded', mode: 'WORK' });
    // Capacity well above the plan's agents at once: the limit under test binds first.
    await call('/pools', { name: 'crowd-gpu', capacity: 3 * agentsAtOnce });
    const tenant: CrowdedTenant = { spaceId: space.id, key, mailboxId: mailbox.id, scopeId: rng.uuid(), pool: 'crowd-gpu' };
    const tasks = Array.from({ length: 3 * agentsAtOnce }, (_, i) => ({ scopeId: tenant.scopeId, mailboxId: mailbox.id, taskKey: `seeded.${i}`, ...(i % 3 === 0 ? { requirements: { pools: [{ name: 'crowd-gpu', units: 1 + (i % 2) }] } } : {}) }));
    await call('/tasks/submit-batch', { tasks });
    // The server has seen the organization: it reads its load at the next sync, as one that has run a while would have.
    await server.runDueWork();
    return new LeaseWorkload(sim, org.id, tenant);
  }

  /** `count`: how many lease agents (the limited kind's swarm weight, swarm.ts); two by default. */
  agents(network: Network, rng: SimRandom, count = agentCount): LeaseAgent[] {
    const sim: SimContext = Object.create(this.sim, { rng: { value: rng }, network: { value: network }, scheduler: { value: network.scheduler } });
    this.agentCount = count;
    return Array.from({ length: count }, (_, i) => new LeaseAgent(`lease${i}`, sim, this.tenant, network, this.replies, callsPerAgent));
  }

  /** After a step: the organization's live leases, as the store counts them, within its agents at once. `serverStartsMs`: each start of the main server, the first included. */
  async checkStep(store: Store, nowMs: number, serverStartsMs: readonly number[]): Promise<string[]> {
    if (this.agentCount === 0) return []; // the set-up took no lease: nothing can have moved
    const loads = await store.read((tx) => tx.usage.loadOf([this.orgId], nowMs));
    return checkAgentsAtOnce(loads.get(this.orgId)?.liveLeases ?? 0, nowMs, {
      agentsAtOnce,
      serverStartsMs: serverStartsMs.slice(1),
      repliedAtMs: this.replies,
      // A restarted server puts the organization on its sync list at its first call, and syncs on the next 1 s tick.
      syncedAfterReplyMs: 1_000 + 500,
      // The longest lease asked for, then the sweep: every 1 s tick, later by up to 3 s when a drain takes the server down.
      leaseLivesMs: maxLeaseSeconds * 1_000 + 1_000 + 3_000 + 500,
    });
  }
}

function must(reply: { statusCode: number; body: any } | undefined): any {
  if (!reply || reply.statusCode >= 300) throw new Error(`simulation set-up failed: ${JSON.stringify(reply)}`);
  return reply.body;
}
