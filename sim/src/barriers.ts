import type { Store } from '@baton/core';
import { BarrierAgent } from './agents/barrier-agent';
import { BarrierLedger, checkBarriersFinal, checkBarrierStep } from './checks/barriers';
import type { SimContext } from './context';
import type { SimRandom } from './rng';
import type { ServerHost } from './server-host';

/** Barrier agents per run, besides the --agents workers: enough to meet, few enough to release often. */
const agentCount = 3;

/**
 * The barrier part of a run in one place, so simulation.ts needs a line per phase: the
 * operator's barriers, the agents that meet at them, and their checks.
 */
export class BarrierWorkload {
  readonly ledger: BarrierLedger;

  private constructor(
    private readonly sim: SimContext,
    private readonly spaceId: string,
    readonly barrierIds: readonly string[],
  ) {
    this.ledger = new BarrierLedger((message) => sim.ledger.violation(message));
  }

  /** One or two barriers of target 2 to 4, made straight through the server: set-up, not under test. */
  static async setUp(server: ServerHost, sim: SimContext, rng: SimRandom): Promise<BarrierWorkload> {
    const { spaceId, key } = sim.auth();
    const ids: string[] = [];
    for (let i = 0, n = rng.int(1, 2); i < n; i++) {
      const reply = await server.handle({
        method: 'POST',
        path: `/v1/spaces/${spaceId}/barriers`,
        headers: { authorization: `Bearer ${key}`, 'idempotency-key': `setup-barrier-${i}` },
        body: { scopeId: rng.uuid(), target: rng.int(2, 4) },
      });
      if (reply?.statusCode !== 201) throw new Error(`simulation set-up failed: ${JSON.stringify(reply)}`);
      ids.push(reply.body.id);
    }
    return new BarrierWorkload(sim, spaceId, ids);
  }

  /** `count`: how many barrier agents (the seed's swarm weight, swarm.ts); three by default. */
  agents(count = agentCount): BarrierAgent[] {
    return Array.from({ length: count }, (_, i) => new BarrierAgent(`barrier${i}`, this.sim, this.barrierIds, this.ledger));
  }

  checkStep(store: Store): Promise<string[]> {
    return checkBarrierStep(store, this.spaceId, this.barrierIds);
  }

  checkFinal(store: Store): Promise<string[]> {
    return checkBarriersFinal(store, this.spaceId, this.barrierIds, this.ledger);
  }
}
