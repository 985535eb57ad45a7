import type { Store } from '@baton/core';
import { openStore, createScratchDatabase } from '@baton-coordination/server';
import { Janitor } from './agents/janitor';
import { plantBug, type Plant, type PlantedBug } from './bugs/catalogue';
import { PlantedStore } from './bugs/planted-store';
import { BarrierWorkload } from './barriers';
import { LimitsWorkload } from './limits';
import { LeaseWorkload } from './leases';
import { CoordinationWorkload } from './coordination';
import { QuotaAgent } from './agents/quota-agent';
import { KeyReuser } from './agents/key-reuser';
import { MessageSender } from './agents/message-sender';
import { MessageWorker } from './agents/message-worker';
import { Spender } from './agents/spender';
import { TaskWorkload } from './agents/task-workload';
import type { RuntimeBugs } from './agents/task-worker';
import type { GroupStats } from './checks/groups';
import type { TaskRuntimeStats } from './checks/tasks';
import { Watcher } from './agents/watcher';
import { WatchFollower } from './agents/watch-follower';
import { checkWatchFollower } from './checks/watch';
import { checkRetention } from './checks/retention';
import { checkAllowanceLiveness, checkAllowanceWakes } from './checks/allowance-liveness';
import { checkWebhookDeliveries, setUpDestination } from './checks/webhooks';
import { WebhookReceiver } from './webhook-receiver';
import { ForeignWriterWatch, untilJournalReadable } from './journal-horizon';
import { checkFinal, checkStep, readJournal } from './checker';
import { MessageLedger } from './checks/messages';
import type { Phase, SimContext } from './context';
import { drawFaults, noFaults, type Faults } from './faults';
import { countOf, drawWeights, workerKinds, type AgentWeights } from './swarm';
import { Ledger } from './ledger';
import { Network } from './network';
import { SimRandom } from './rng';
import { Scheduler } from './scheduler';
import { adminToken, ServerHost } from './server-host';
import type { HttpReply } from './http';
import { Trace } from './trace';
import { WatchedStore } from './watched-store';

export type StoreKind = 'memory' | 'pglite' | 'pg';

export interface SimConfig {
  seed: number;
  /** Working agents: about two in three spend budgets, the rest share quotas (a janitor and a journal watcher run besides them). */
  agents: number;
  /** Scheduler steps in the safety phase. */
  steps: number;
  /** The faults of the run; drawn from the seed when absent (swarm testing). */
  faults?: Faults;
  /** How many agents of each kind run (swarm.ts); drawn from the seed when absent (swarm testing). */
  weights?: AgentWeights;
  store: StoreKind;
  /** Print the trace as it happens. */
  trace?: boolean;
  /** False: no message sender or workers (the task agents alone must catch a double delivery). Default true. */
  messageAgents?: boolean;
  /** A known bug planted at one of the run's seams (bugs/catalogue.ts), to show the checkers catch it. */
  plant?: PlantedBug;
  /** Test-only: plant a bug in the task workers' runtime seam (sim/src/agents/task-worker.ts). */
  runtimeBugs?: RuntimeBugs;
}

export interface SimResult {
  config: SimConfig & { faults: Faults; weights: AgentWeights };
  violations: string[];
  traceHash: string;
  steps: number;
  requests: number;
  simulatedMs: number;
  wallMs: number;
  /** What the task workers' runtime did (admits, completes, nacks, lease losses). */
  tasks: TaskRuntimeStats;
  /** What the group coordinators did and how their groups ended. */
  groups: GroupStats;
}

/** 2026-01-01T00:00:00Z: every run starts its simulated clock here. */
const startMs = Date.UTC(2026, 0, 1);
/** Simulated time after the safety phase for outstanding work to finish (settleBy + skew + grace). */
const livenessMs = 120_000;
const tickMs = 1_000;

/** Runs one seeded simulation to the end and reports what the checkers found. */
export async function simulate(config: SimConfig): Promise<SimResult> {
  const wallStart = performance.now();
  const rng = new SimRandom(String(config.seed));
  // Drawn even when the config fixes the faults, so the other streams are the same either way
  // and a replay with the printed --faults reproduces the run exactly.
  const drawn = drawFaults(rng.fork('faults'));
  const faults = config.faults ?? drawn;
  // The workload's swarm weights, from a stream of their own: drawing them moves no other choice.
  const weights = config.weights ?? drawWeights(new SimRandom(`${config.seed}/swarm`));
  const scheduler = new Scheduler(startMs);
  const trace = new Trace(false, config.trace ?? false);
  const { store: rawStore, close } = await openSimStore(config.store);
  // The servers and agents use the store through this; the per-step checks read rawStore, and
  // only after a step in which the store was used (watched-store.ts).
  const store = new WatchedStore(rawStore);
  const plant: Plant = config.plant ? plantBug(config.plant, scheduler.clock) : {};
  // The servers' store: the watched one, with a planted bug's repositories in front when it has any.
  const serverStore = plant.store ? new PlantedStore(store, plant.store) : store;
  const ledger = new Ledger();
  // Real time, beside the simulation and not in it: it only reads PostgreSQL's activity (journal-horizon.ts).
  const foreignWriters = new ForeignWriterWatch(rawStore, config.store === 'pg');
  try {
    const receiver = new WebhookReceiver(rng.fork('webhooks'), scheduler.clock, trace);
    const webhooks = receiver.dispatcherOptions();
    if (plant.deliver && webhooks.deliver) webhooks.deliver = plant.deliver(webhooks.deliver);
    const server = new ServerHost(serverStore, scheduler, rng.fork('server'), webhooks, plant, (cause) => ledger.violation(cause));
    await server.start();
    const tenant = await setUpTenant(server, rng);
    const destination = await setUpDestination(server, tenant, receiver, new SimRandom(`${rng.seed}/destination`));
    let phase: Phase = 'safety';
    const sim: SimContext = {
      scheduler,
      rng: rng.fork('agents'),
      ledger,
      trace,
      network: undefined as unknown as Network,
      faults: () => (phase === 'safety' ? faults : noFaults),
      auth: () => tenant,
      budgetIds: tenant.budgetIds,
      allowanceIds: tenant.allowanceIds,
      allowanceUnitsLimits: tenant.allowanceUnitsLimits,
      mailboxIds: tenant.mailboxIds,
      messageScopeId: tenant.messageScopeId,
      get phase() {
        return phase;
      },
    };
    sim.network = new Network(scheduler, rng.fork('network'), sim.faults, server, trace);
    receiver.connect(sim.faults);
    const barriers = await BarrierWorkload.setUp(server, sim, rng.fork('barriers'));
    const tasks = await TaskWorkload.setUp(server, sim, rng.seed, config.runtimeBugs);
    const limits = await LimitsWorkload.setUp(server, store, sim, new SimRandom(`${rng.seed}/limits`));
    const leases = await LeaseWorkload.setUp(server, sim, new SimRandom(`${rng.seed}/leases`));
    // Claims, timers and runs go to a second server process on the same store, with streams of its
    // own (ids, network, agents, restarts), so the rest of the run moves only through the shared
    // sweep (the main server fires their timers and finishes their cascades, drawing ids as it goes).
    const coordinationServer = new ServerHost(serverStore, scheduler, new SimRandom(`${rng.seed}/coordination-server`), undefined, plant, (cause) => ledger.violation(cause));
    await coordinationServer.start();
    const coordination = await CoordinationWorkload.setUp(coordinationServer, sim, new SimRandom(`${rng.seed}/coordination`));
    const watcher = new Watcher('watcher', sim);
    // Long-polling followers of GET /watch (two at weight 1), each with a filter its seed picks.
    const followers = Array.from({ length: countOf(weights, 'follower') }, (_, i) => new WatchFollower(`follower${i}`, sim));
    const workers = workerKinds(weights, config.agents).map((kind, i) => (kind === 'quota' ? new QuotaAgent(`quota${i}`, sim) : new Spender(`agent${i}`, sim)));
    const messageLedger = new MessageLedger((message) => ledger.violation(message), ledger.crashedSessions);
    // Message agents run besides --agents (a fixed few, like the barrier agents): one sender, two workers, one of them often slow.
    // Past the second, message workers alternate the two slownesses.
    // (Made even when left out, so the agents after them draw the same streams either way.)
    const messageAgents = [
      ...Array.from({ length: countOf(weights, 'sender') }, (_, i) => new MessageSender(`sender${i}`, sim, messageLedger)),
      ...Array.from({ length: countOf(weights, 'mworker') }, (_, i) => new MessageWorker(`mworker${i}`, sim, messageLedger, i % 2 === 0 ? 0.1 : 0.35)),
    ];
    const taskCounts = { tsubmit: countOf(weights, 'tsubmit'), tworker: countOf(weights, 'tworker'), tcancel: countOf(weights, 'tcancel'), gcoord: countOf(weights, 'gcoord') };
    const agents = [...workers, new Janitor('janitor', sim), watcher, ...followers, ...(config.messageAgents === false ? [] : messageAgents), ...tasks.agents(taskCounts)];
    for (const agent of agents) agent.start();
    for (const agent of barriers.agents(countOf(weights, 'barrier'))) agent.start();
    for (const agent of limits.agents(new Network(scheduler, rng.fork('limits-network'), sim.faults, server, trace), countOf(weights, 'limited'))) agent.start();
    // The agents-at-once part: streams of its own, and steps not among the run's --steps, so the rest of the run is as before.
    const leaseNetwork = new Network(scheduler.uncounted(), new SimRandom(`${rng.seed}/leases-network`), sim.faults, server, trace);
    for (const agent of leases.agents(leaseNetwork, new SimRandom(`${rng.seed}/leases-agents`), countOf(weights, 'limited'))) agent.start();
    const coordinationNetwork = new Network(scheduler.uncounted(), new SimRandom(`${rng.seed}/coordination-network`), sim.faults, coordinationServer, trace);
    const coordinationCounts = { claim: countOf(weights, 'claim'), timer: countOf(weights, 'timer'), run: countOf(weights, 'run') };
    for (const agent of coordination.agents(coordinationNetwork, new SimRandom(`${rng.seed}/coordination-agents`), coordinationCounts)) agent.start();
    // Made last and on a network of its own, so every other agent draws the same streams as before it.
    const reuserSim: SimContext = Object.create(sim, { network: { value: new Network(scheduler, new SimRandom(`${rng.seed}/reuser-network`), sim.faults, server, trace) } });
    for (let i = 0; i < countOf(weights, 'reuser'); i++) new KeyReuser(`reuser${i}`, reuserSim).start();
    scheduleRestarts(scheduler.uncounted(), coordinationServer, new SimRandom(`${rng.seed}/coordination-server-faults`), sim, trace);
    scheduleServerFaults(scheduler, server, rng.fork('server-faults'), sim, trace);

    const checkEvery = config.store === 'memory' ? 1 : 25;
    const stepBudgetIds = [...tenant.budgetIds, ...tasks.world.budgets.map((b) => b.id)];
    let checkedAt = -1;
    while (scheduler.steps < config.steps && ledger.violations.length === 0) {
      await scheduler.step();
      // After every step that used the store (one that did not leaves every row as last checked).
      const changes = store.changes;
      if (scheduler.steps % checkEvery !== 0 || changes === checkedAt) continue;
      // Taken before the checks read: a call made while they read moves the count again.
      checkedAt = changes;
      ledger.violations.push(...(await checkStep(rawStore, tenant.spaceId, stepBudgetIds)));
      ledger.violations.push(...(await tasks.checkStep(rawStore)));
      ledger.violations.push(...(await barriers.checkStep(rawStore)));
      ledger.violations.push(...(await leases.checkStep(rawStore, scheduler.now(), server.startsMs)));
      ledger.violations.push(...(await checkAllowanceWakes(rawStore, tenant.spaceId, tenant.allowanceIds, scheduler.now())));
    }
    phase = 'liveness';
    trace.add(scheduler.now(), 'liveness phase: faults off');
    if (!server.isUp()) await server.restart();
    if (!coordinationServer.isUp()) await coordinationServer.restart();
    const livenessEndMs = scheduler.now() + livenessMs;
    while (ledger.violations.length === 0 && (scheduler.nextAtMs() ?? Infinity) <= livenessEndMs) {
      await scheduler.step();
      // Lines still waiting drain here, with the sweep alone serving them: their wake times must keep up.
      const changes = store.changes;
      if (changes === checkedAt) continue;
      checkedAt = changes;
      ledger.violations.push(...(await checkAllowanceWakes(rawStore, tenant.spaceId, tenant.allowanceIds, scheduler.now())));
    }
    phase = 'done';
    // The server's tick (and its deadline sweep) stops now; give its last run a tick's margin.
    const sweptUntilMs = scheduler.now() - 2 * tickMs;
    // Let calls still on the wire finish (agents start nothing new once done), then catch up.
    const drainEndMs = scheduler.now() + 10_000;
    while ((scheduler.nextAtMs() ?? Infinity) <= drainEndMs) await scheduler.step();
    // From here every read of the journal must see all of it (journal-horizon.ts).
    ledger.violations.push(...(await untilJournalReadable(rawStore, tenant.spaceId)));
    while ((await drive(scheduler, watcher.readPage())) > 0);
    for (const follower of followers) while ((await drive(scheduler, follower.readPage())) > 0);
    // The dispatcher catches up with what the journal holds (faults are off): a few sweeps, a
    // second of simulated time apart (a failing destination's retry is due within seconds).
    const finalJournal = await readJournal(store, tenant.spaceId);
    for (let round = 0; round < 60 && !destination.caughtUp(finalJournal); round++) {
      await drive(scheduler, scheduler.sleep(tickMs, 'webhook catch-up'));
      await server.runDueWork();
    }
    if (ledger.violations.length === 0) ledger.violations.push(...(await checkFinal(store, tenant.spaceId, tenant.budgetIds, ledger, watcher.seen, { mailboxIds: tenant.mailboxIds, ledger: messageLedger, nowMs: scheduler.now() }, { workload: tasks, nowMs: scheduler.now(), fifo: config.store !== 'pg', sweptUntilMs })));
    // Journal order is commit order only where transactions run one at a time (as for the task checks' fifo).
    if (ledger.violations.length === 0 && config.store !== 'pg') checkAllowanceLiveness(await readJournal(store, tenant.spaceId), tenant.allowanceIds, ledger.violations);
    if (ledger.violations.length === 0) ledger.violations.push(...(await barriers.checkFinal(store)));
    if (ledger.violations.length === 0) ledger.violations.push(...limits.check(server.startsMs, faults.duplicate > 0));
    if (ledger.violations.length === 0) ledger.violations.push(...(await checkRetention(store, [tenant.spaceId, limits.spaceId], startMs, scheduler.now())));
    if (ledger.violations.length === 0) ledger.violations.push(...(await coordination.checkFinal(store, sweptUntilMs)));
    if (ledger.violations.length === 0) {
      const journal = await readJournal(store, tenant.spaceId);
      for (const f of followers) ledger.violations.push(...checkWatchFollower(f.name, journal, f.filter, f.seen));
      ledger.violations.push(...receiver.problems, ...checkWebhookDeliveries(journal, destination, receiver.received));
    }
    if (ledger.violations.length > 0) ledger.violations.push(...foreignWriters.note());
    return {
      config: { ...config, faults, weights },
      violations: ledger.violations,
      traceHash: trace.digest(),
      steps: scheduler.steps,
      requests: sim.network.requests,
      simulatedMs: scheduler.now() - startMs,
      wallMs: performance.now() - wallStart,
      tasks: structuredClone(tasks.ledger.stats),
      groups: structuredClone(tasks.groups.stats),
    };
  } finally {
    foreignWriters.stop();
    await close();
  }
}

/**
 * Restarts and drains happen on the server's tick, with the background sweep. During liveness
 * the tick keeps sweeping but no longer injures the server.
 */
function scheduleServerFaults(scheduler: Scheduler, server: ServerHost, rng: SimRandom, sim: SimContext, trace: Trace): void {
  const tick = async (): Promise<void> => {
    if (sim.phase === 'done') return;
    await server.runDueWork();
    if (rng.chance(sim.faults().restart)) {
      trace.add(scheduler.now(), 'server restart');
      await server.restart();
    } else if (rng.chance(sim.faults().drain)) {
      const downMs = rng.int(200, 3_000);
      trace.add(scheduler.now(), `server drain, down ${downMs} ms`);
      await server.drainAndRestart(downMs);
    }
    scheduler.after(tickMs, 'tick', tick);
  };
  scheduler.after(tickMs, 'tick', tick);
}

/**
 * The coordination server's restarts and drains, at the run's fault rates on a tick of its own;
 * the sweeps stay with the main server's tick (they are cross-space, and its draws must not move).
 */
function scheduleRestarts(scheduler: Scheduler, server: ServerHost, rng: SimRandom, sim: SimContext, trace: Trace): void {
  const tick = async (): Promise<void> => {
    if (sim.phase === 'done') return;
    if (rng.chance(sim.faults().restart)) {
      trace.add(scheduler.now(), 'coordination server restart');
      await server.restart();
    } else if (rng.chance(sim.faults().drain)) {
      const downMs = rng.int(200, 3_000);
      trace.add(scheduler.now(), `coordination server drain, down ${downMs} ms`);
      await server.drainAndRestart(downMs);
    }
    scheduler.after(tickMs, 'coordination tick', tick);
  };
  scheduler.after(tickMs, 'coordination tick', tick);
}

interface Tenant {
  spaceId: string;
  key: string;
  budgetIds: string[];
  allowanceIds: string[];
  allowanceUnitsLimits: Map<string, number>;
  mailboxIds: string[];
  messageScopeId: string;
}

/** The operator's set-up, straight to the server: it is not what the run tests. */
async function setUpTenant(server: ServerHost, rng: SimRandom): Promise<Tenant> {
  const admin = async (path: string, body: unknown): Promise<any> => must(await server.handle({ method: 'POST', path: `/admin/v1${path}`, headers: { authorization: `Bearer ${adminToken}` }, body }));
  const org = await admin('/orgs', { name: 'sim', plan: 'SCALE' });
  const space = await admin(`/orgs/${org.id}/spaces`, { name: 'sim' });
  const key = await admin(`/orgs/${org.id}/keys`, { name: 'agents' });
  const budgetIds: string[] = [];
  for (let i = 0, n = rng.int(1, 3); i < n; i++) {
    const budget = must(
      await server.handle({
        method: 'POST',
        path: `/v1/spaces/${space.id}/budgets`,
        headers: { authorization: `Bearer ${key.secret}`, 'idempotency-key': `setup-${i}` },
        body: { name: `budget${i}`, currency: 'USD', scale: 2, limitMinor: String(rng.int(500, 20_000)) },
      }),
    );
    budgetIds.push(budget.id);
  }
  const allowanceIds: string[] = [];
  const allowanceUnitsLimits = new Map<string, number>();
  for (let i = 0, n = rng.int(1, 2); i < n; i++) {
    const allowance = must(
      await server.handle({
        method: 'POST',
        path: `/v1/spaces/${space.id}/allowances`,
        headers: { authorization: `Bearer ${key.secret}`, 'idempotency-key': `setup-allowance-${i}` },
        body: { name: `quota${i}`, unitsLimit: rng.int(6, 30), windowSeconds: rng.int(1, 10) },
      }),
    );
    allowanceIds.push(allowance.id);
    allowanceUnitsLimits.set(allowance.id, allowance.unitsLimit);
  }
  // Its own stream, drawn from no other, so the mailboxes leave every other choice of the run alone.
  const mailboxRng = new SimRandom(`${rng.seed}/mailboxes`);
  const mailboxIds: string[] = [];
  for (let i = 0, n = mailboxRng.int(1, 2); i < n; i++) {
    const mailbox = must(
      await server.handle({
        method: 'POST',
        path: `/v1/spaces/${space.id}/mailboxes`,
        headers: { authorization: `Bearer ${key.secret}`, 'idempotency-key': `setup-mailbox-${i}` },
        body: { name: `mailbox${i}`, mode: 'WORK', backlogLimit: 1_000 },
      }),
    );
    mailboxIds.push(mailbox.id);
  }
  return { spaceId: space.id, key: key.secret, budgetIds, allowanceIds, allowanceUnitsLimits, mailboxIds, messageScopeId: mailboxRng.uuid() };
}

/** Steps the scheduler until `work` settles: driving a call made from outside any agent. */
async function drive<T>(scheduler: Scheduler, work: Promise<T>): Promise<T> {
  let settled = false;
  const result = work.finally(() => (settled = true));
  while (!settled) if (!(await scheduler.step())) throw new Error('simulation stalled: nothing left to run');
  return result;
}

function must(reply: HttpReply | undefined): any {
  if (!reply || reply.statusCode >= 300) throw new Error(`simulation set-up failed: ${JSON.stringify(reply)}`);
  return reply.body;
}

async function openSimStore(kind: StoreKind): Promise<{ store: Store; close(): Promise<void> }> {
  if (kind === 'memory') {
    const store = await openStore({ kind: 'memory' });
    return { store, close: () => store.close() };
  }
  if (kind === 'pglite') {
    const store = await openStore({ kind: 'pglite' });
    return { store, close: () => store.close() };
  }
  const serverUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
  const scratch = await createScratchDatabase(serverUrl, 'baton_test');
  const store = await openStore({ kind: 'postgres', url: scratch.url });
  return { store, close: () => store.close().finally(() => scratch.drop()) };
}
