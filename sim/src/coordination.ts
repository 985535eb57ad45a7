import type { Store } from '@baton/core';
import { ClaimAgent, RunAgent, TimerAgent, type CoordinationSpace } from './agents/coordination-agents';
import type { Agent } from './agents/agent';
import { readJournal } from './checker';
import { ClaimLedger, checkClaimsJournal } from './checks/claims';
import { checkNoWorkAfterEnd, checkRunsFinal } from './checks/runs';
import { checkTimersFinal } from './checks/timers';
import type { SimContext } from './context';
import type { Network } from './network';
import { SimRandom } from './rng';
import { adminToken, type ServerHost } from './server-host';

/** Claim agents racing on 2 or 3 keys, each for a bounded number of acquire cycles. */
const claimAgentCount = 3;
const claimCycles = 12;
const timerArms = 14;
const runsPerAgent = 4;

/**
 * Claims, timers and runs (docs/design/0020-claims.md, docs/design/0021-timers.md, docs/design/0019-runs.md) under the run's faults, in one place so simulation.ts
 * needs a line per phase. They live in a space of their own (an organization on SCALE), so
 * their events, messages and tasks stay out of the main space's checks, and their agents draw
 * from streams of their own (agents and network), so the other agents' draws are untouched.
 */
export class CoordinationWorkload {
  readonly claims: ClaimLedger;

  private constructor(
    private readonly sim: SimContext,
    private readonly space: CoordinationSpace,
  ) {
    this.claims = new ClaimLedger((message) => sim.ledger.violation(message));
  }

  static async setUp(server: ServerHost, sim: SimContext, rng: SimRandom): Promise<CoordinationWorkload> {
    const admin = async (path: string, body: unknown): Promise<any> => must(await server.handle({ method: 'POST', path: `/admin/v1${path}`, headers: { authorization: `Bearer ${adminToken}` }, body }));
    const org = await admin('/orgs', { name: 'coordination', plan: 'SCALE' });
    const space = await admin(`/orgs/${org.id}/spaces`, { name: 'coordination' });
    const key = (await admin(`/orgs/${org.id}/keys`, { name: 'coordination' })).secret as string;
    const mailbox = must(
      await server.handle({
        method: 'POST',
        path: `/v1/spaces/${space.id}/mailboxes`,
        headers: { authorization: `Bearer ${key}`, 'idempotency-key': 'setup-mailbox' },
        body: { name: 'coordination', mode: 'WORK', backlogLimit: 1_000 },
      }),
    );
    const budget = must(
      await server.handle({
        method: 'POST',
        path: `/v1/spaces/${space.id}/budgets`,
        headers: { authorization: `Bearer ${key}`, 'idempotency-key': 'setup-budget' },
        body: { name: 'runs', currency: 'USD', scale: 2, limitMinor: '1000000' },
      }),
    );
    const claimKeys = Array.from({ length: rng.int(2, 3) }, (_, i) => `lock${i}`);
    return new CoordinationWorkload(sim, { spaceId: space.id, key, mailboxId: mailbox.id, claimScopeId: rng.uuid(), claimKeys, timerScopeId: rng.uuid(), budgetId: budget.id });
  }

  get spaceId(): string {
    return this.space.spaceId;
  }

  /** The agents, on `network` (a stream of its own) and the agent stream `rng`, calling the coordination space. */
  /** `counts`: how many claim, timer and run agents (the seed's swarm weights, swarm.ts); 3, 1, 1 by default. */
  agents(network: Network, rng: SimRandom, counts: { claim: number; timer: number; run: number } = { claim: claimAgentCount, timer: 1, run: 1 }): Agent[] {
    const space = this.space;
    const sim: SimContext = Object.create(this.sim, { rng: { value: rng }, network: { value: network }, auth: { value: () => space }, scheduler: { value: network.scheduler } });
    return [
      ...Array.from({ length: counts.claim }, (_, i) => new ClaimAgent(`claim${i}`, sim, space, this.claims, claimCycles)),
      ...Array.from({ length: counts.timer }, (_, i) => new TimerAgent(`timer${i}`, sim, space, timerArms)),
      ...Array.from({ length: counts.run }, (_, i) => new RunAgent(`run${i}`, sim, space, runsPerAgent)),
    ];
  }

  /** `sweptUntilMs`: the last moment the server's sweeps surely ran (timers due before it must have fired). */
  async checkFinal(store: Store, sweptUntilMs: number): Promise<string[]> {
    const journal = await readJournal(store, this.space.spaceId);
    return [...checkClaimsJournal(journal, this.claims), ...(await checkTimersFinal(store, this.space.spaceId, journal, sweptUntilMs)), ...checkNoWorkAfterEnd(journal), ...(await checkRunsFinal(store, this.space.spaceId, journal))];
  }
}

function must(reply: { statusCode: number; body: any } | undefined): any {
  if (!reply || reply.statusCode >= 300) throw new Error(`simulation set-up failed: ${JSON.stringify(reply)}`);
  return reply.body;
}
