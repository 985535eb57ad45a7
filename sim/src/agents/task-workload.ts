import { capacityBounds, type JournalEvent, type Store } from '@baton/core';
import { checkGroupsFinal, GroupLedger, GroupWatch } from '../checks/groups';
import { checkTaskDeadlines, checkTaskResourcesStep, checkTasksFinal, TaskLedger, type TaskWorld } from '../checks/tasks';
import type { SimContext } from '../context';
import { SimRandom } from '../rng';
import type { ServerHost } from '../server-host';
import type { Agent } from './agent';
import type { TaskFixture, TaskSpec } from './task-fixture';
import { GroupCoordinator } from './group-coordinator';
import { TaskCanceller } from './task-canceller';
import { TaskReaper } from './task-reaper';
import { TaskSubmitter } from './task-submitter';
import { TaskWorker, type RuntimeBugs } from './task-worker';

/** How many agents of each task kind run (the seed's swarm weights, swarm.ts); the task reaper always runs. */
export interface TaskAgentCounts {
  tsubmit: number;
  tworker: number;
  tcancel: number;
  gcoord: number;
}

/**
 * The task part of a run (admission, docs/simulator.md "Tasks"): the operator's task mailbox,
 * a small pool, a work limit, an allowance and a budget that only tasks use, the agents that
 * submit, work and cancel tasks, and their checks. Resources are scarce on purpose, so
 * admission often passes a delivery over and the FIFO and all-or-nothing checks have work.
 */
export class TaskWorkload implements TaskFixture {
  readonly ledger: TaskLedger;
  /** What group coordinators were told, and the store's group decisions as first seen (checks/groups.ts). */
  readonly groups: GroupLedger;
  private readonly groupWatch = new GroupWatch();

  private constructor(
    private readonly sim: SimContext,
    private readonly spaceId: string,
    readonly world: TaskWorld,
    readonly scopeId: string,
    private readonly seed: string,
    private readonly runtimeBugs: RuntimeBugs,
  ) {
    this.ledger = new TaskLedger((message) => sim.ledger.violation(message));
    this.groups = new GroupLedger((message) => sim.ledger.violation(message));
  }

  /** Made straight through the server, from its own random stream: set-up, not under test. */
  static async setUp(server: ServerHost, sim: SimContext, seed: string, runtimeBugs: RuntimeBugs = {}): Promise<TaskWorkload> {
    const rng = new SimRandom(`${seed}/tasks`);
    const { spaceId, key } = sim.auth();
    const make = async (path: string, body: Record<string, unknown>): Promise<any> => {
      const reply = await server.handle({ method: 'POST', path: `/v1/spaces/${spaceId}${path}`, headers: { authorization: `Bearer ${key}`, 'idempotency-key': `setup-task-${path}-${String(body.name)}` }, body });
      if (reply?.statusCode !== 201) throw new Error(`simulation set-up failed: ${JSON.stringify(reply)}`);
      return reply.body;
    };
    // Now and then a setting at the bound the API accepts, from a stream of its own (the other draws stay as they were).
    const bounds = new SimRandom(`${seed}/bounds`);
    const atBound = <T>(drawn: T, bound: T, chance: number): T => (bounds.chance(chance) ? bound : drawn);
    const mailbox = await make('/mailboxes', { name: 'tasks0', mode: 'WORK', backlogLimit: 1_000 });
    const pool = await make('/pools', { name: 'gpu', capacity: atBound(rng.int(2, 3), capacityBounds.min, 0.3) });
    const limit = await make('/work-limits', { name: 'slots', maxConcurrent: atBound(2, capacityBounds.min, 0.3) });
    const allowance = await make('/allowances', { name: 'taskquota', unitsLimit: atBound(rng.int(4, 12), 1, 0.2), windowSeconds: atBound(rng.int(2, 10), 1, 0.2) });
    const budget = await make('/budgets', { name: 'taskbudget', currency: 'USD', scale: 2, limitMinor: String(rng.int(1_000, 4_000)) });
    const world: TaskWorld = {
      mailboxIds: [mailbox.id],
      pools: [{ id: pool.id, name: pool.name, capacity: pool.capacity }],
      workLimits: [{ id: limit.id, name: limit.name, maxConcurrent: limit.maxConcurrent }],
      allowances: [{ id: allowance.id, name: allowance.name, unitsLimit: allowance.unitsLimit, windowSeconds: allowance.windowSeconds, createdAt: Date.parse(allowance.createdAt) }],
      budgets: [{ id: budget.id, name: budget.name, limitMinor: BigInt(budget.limitMinor) }],
    };
    return new TaskWorkload(sim, spaceId, world, rng.uuid(), seed, runtimeBugs);
  }

  /**
   * One submitter, four runtime workers (slow from 5% to 35% of jobs; the last runs two handlers
   * at once), a canceller, the budget owner's reaper and three task-group coordinators, whose
   * members the same workers complete (the groups' gate scopes sit under the workers' scope),
   * besides --agents.
   */
  agents(counts: TaskAgentCounts = { tsubmit: 1, tworker: 4, tcancel: 1, gcoord: 3 }): Agent[] {
    const bugs = this.runtimeBugs;
    // Past the fourth, workers repeat the four kinds of slowness and concurrency.
    const workerKinds = [
      { slowness: 0.05, concurrency: 1 },
      { slowness: 0.1, concurrency: 1 },
      { slowness: 0.2, concurrency: 1 },
      { slowness: 0.35, concurrency: 2 },
    ];
    return [
      ...Array.from({ length: counts.tsubmit }, (_, i) => new TaskSubmitter(`tsubmit${i}`, this.sim, this)),
      ...Array.from({ length: counts.tworker }, (_, i) => new TaskWorker(`tworker${i}`, this.sim, this, { ...workerKinds[i % workerKinds.length]!, bugs })),
      ...Array.from({ length: counts.tcancel }, (_, i) => new TaskCanceller(`tcancel${i}`, this.sim, this)),
      new TaskReaper('treaper', this.sim, this),
      ...Array.from({ length: counts.gcoord }, (_, i) => new GroupCoordinator(`gcoord${i}`, this.sim, this, this.groups)),
    ];
  }

  /** The submit body of `taskKey`: no requirements about a quarter of the time, else some mix of the four kinds. */
  specOf(taskKey: string): TaskSpec {
    const rng = new SimRandom(`${this.seed}/task/${taskKey}`);
    const [pool] = this.world.pools;
    const [allowance] = this.world.allowances;
    const spec: TaskSpec = { mailboxId: rng.pick(this.world.mailboxIds), input: { n: rng.int(1, 1_000) }, requirements: { pools: [], quotas: [], budgets: [] } };
    if (rng.chance(0.25)) return spec;
    if (rng.chance(0.6)) spec.requirements.pools.push({ name: pool!.name, units: rng.int(1, pool!.capacity) });
    if (rng.chance(0.35)) spec.requirements.quotas.push({ name: allowance!.name, units: rng.int(1, Math.min(3, allowance!.unitsLimit)) });
    if (rng.chance(0.35)) spec.requirements.budgets.push({ name: this.world.budgets[0]!.name, reserveMinor: String(rng.int(100, 800)) });
    if (rng.chance(0.5)) spec.workLimit = this.world.workLimits[0]!.name;
    return spec;
  }

  budgetIdOf(name: string): string {
    return this.world.budgets.find((b) => b.name === name)!.id;
  }

  async checkStep(store: Store): Promise<string[]> {
    return [...(await checkTaskResourcesStep(store, this.spaceId, this.world)), ...(await this.groupWatch.checkStep(store, this.spaceId))];
  }

  /**
   * `fifo`: only where the journal order is the commit order (transactions one at a time).
   * `sweptUntilMs`: a group's or task's deadline before it has seen the deadline sweep run after it.
   */
  async checkFinal(store: Store, journal: readonly JournalEvent[], nowMs: number, fifo: boolean, sweptUntilMs: number): Promise<string[]> {
    return [
      ...(await checkTasksFinal(store, this.spaceId, this.world, journal, this.ledger, nowMs, fifo)),
      ...(await checkTaskDeadlines(store, this.spaceId, journal, this.ledger.taskIds, sweptUntilMs)),
      ...(await checkGroupsFinal(store, this.spaceId, journal, this.groups, sweptUntilMs)),
    ];
  }
}
