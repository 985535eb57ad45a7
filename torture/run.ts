import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ProcessBug } from './bugs';
import { checkLogs, checkOutageLogs, checkRun, readSnapshot, type CheckResult } from './checker';
import { adminToken, clientProcess, fleet, freePort, serverProcess, waitReady } from './cluster';
import { faultSchedule, storeFaults, type Fault, type FaultKind } from './faults';
import { HistoryWriter, readHistory } from './history';
import { outageNote, unavailableDuringOutages } from './checks/outage';
import { PostgresCluster } from '../server/src/testing/postgres-cluster';
import type { ManagedProcess } from './processes';
import { roleNames, type ClientConfig } from './roles/context';

export interface TortureOptions {
  seed: string;
  /** How long faults are injected; the run takes about 20 s more (start, quiet period, checks). */
  seconds: number;
  store: 'pg' | 'pglite';
  plant?: ProcessBug;
  /** Only these fault kinds (default: every kind the store supports). */
  faults?: FaultKind[];
  /** Inject `faults` in the order given, round and round, instead of drawing each at random. */
  cycleFaults?: boolean;
  /**
   * Go on injecting past `seconds` until each kind named here has happened this many times (at
   * most `seconds` more). A check that needs two restarts needs two restarts, not a clock: on a
   * loaded machine a PGlite server takes longer to come back, and 15 s held only one.
   */
  atLeast?: Partial<Record<FaultKind, number>>;
  /**
   * On PostgreSQL, after the faults: PostgreSQL down this long while the clients go on (default
   * 5; 0 skips the phase). They must see 503 UNAVAILABLE with Retry-After and lose nothing.
   */
  outageSeconds?: number;
  /** Keep the run's directory (histories, logs) even when it passed. */
  keep?: boolean;
  log?: (line: string) => void;
}

export interface TortureResult {
  seed: string;
  store: 'pg' | 'pglite';
  /** Calls the servers answered with success. */
  operations: number;
  /** Every attempt a client made, answered or not. */
  calls: number;
  faults: Partial<Record<FaultKind, number>>;
  /** Calls sent and answered 503 UNAVAILABLE during the outage phase (none without one). */
  unavailable: number;
  results: CheckResult[];
  violations: number;
  /** Where the histories and logs are (removed after a passing run unless `keep`). */
  workDir: string;
}

/** The lease every worker and claimer asks for: the API's shortest, so pauses outlast it. */
const leaseSeconds = 5;
const quietMs = 3_000;
const defaultOutageSeconds = 5;
/**
 * The cluster trusts local connections, so this password is never checked; the servers get it in
 * DATABASE_URL all the same, so the log scan can show it never reaches a log.
 */
const databasePassword = `torture-db-${randomUUID()}`;

interface Servers {
  list: Array<{ process: ManagedProcess; origin: string }>;
  cluster: PostgresCluster | undefined;
}

export async function runTorture(options: TortureOptions): Promise<TortureResult> {
  const log = options.log ?? (() => {});
  const workDir = mkdtempSync(join(tmpdir(), `baton-torture-${options.seed}-`));
  const historyDir = join(workDir, 'history');
  const logDir = join(workDir, 'logs');
  mkdirSync(historyDir);
  mkdirSync(logDir);
  const servers = await startServers(options, workDir, logDir);
  const clients: ManagedProcess[] = [];
  try {
    const origins = servers.list.map((s) => s.origin);
    const base = await setUp(origins[0]!, historyDir, options.seed);
    for (const role of roleNames) for (let i = 0; i < fleet[role]; i++) clients.push(clientProcess(`${role}${i}`, role, { ...base, origins }, logDir));
    await Promise.all(clients.map((c) => c.start()));
    log(`torture: seed ${options.seed}, ${options.store}, ${servers.list.length} server(s), ${clients.length} clients, ${options.seconds} s of faults; work dir ${workDir}`);
    const faults = await injectFaults(options, servers, clients, log);
    const outageSeconds = options.outageSeconds ?? defaultOutageSeconds;
    if (servers.cluster && outageSeconds > 0) await storeOutage(servers.cluster, servers, outageSeconds, historyDir, log);
    await heal(servers, clients);
    await new Promise((resolve) => setTimeout(resolve, quietMs));
    await Promise.all(clients.map((c) => c.stop(8_000)));
    const history = readHistory(historyDir);
    const snapshot = await readSnapshot({ origin: origins[0]!, ...base });
    await Promise.all(servers.list.map((s) => s.process.stop()));
    const logs = serverLogs(servers, logDir);
    const results = [...checkRun(history, snapshot), checkLogs(logs, [adminToken, base.apiKey, databasePassword]), checkOutageLogs(logs)];
    const violations = results.reduce((n, r) => n + r.violations.length, 0);
    const operations = history.calls.filter((c) => c.status !== undefined && c.status < 300).length;
    return { seed: options.seed, store: options.store, operations, calls: history.calls.length, faults, unavailable: unavailableDuringOutages(history), results, violations, workDir };
  } finally {
    await Promise.all(clients.map((c) => c.kill()));
    await Promise.all(servers.list.map((s) => s.process.stop()));
    for (const p of [...clients, ...servers.list.map((s) => s.process)]) p.close();
    await servers.cluster?.destroy();
  }
}

function serverLogs(servers: Servers, logDir: string): Map<string, string> {
  return new Map(servers.list.map((s) => [s.process.name, readFileSync(join(logDir, `${s.process.name}.log`), 'utf8')]));
}

/** Two servers on a PostgreSQL of the run's own, or one on PGlite in the run's directory. */
async function startServers(options: TortureOptions, workDir: string, logDir: string): Promise<Servers> {
  const cluster = options.store === 'pg' ? await PostgresCluster.create(await freePort()) : undefined;
  const store = cluster ? { databaseUrl: cluster.urlWithPassword(databasePassword) } : { dataDir: join(workDir, 'pglite') };
  const list = [];
  for (let i = 0; i < (cluster ? 2 : 1); i++) {
    const server = await serverProcess(`server${i}`, { store, plant: options.plant, logDir });
    await server.process.start();
    // One at a time: the first runs the migrations.
    await waitReady(server.origin);
    list.push(server);
  }
  return { list, cluster };
}

/** An organization without caps (the run measures faults, not limits), and what the roles share. */
async function setUp(origin: string, historyDir: string, seed: string): Promise<Omit<ClientConfig, 'role' | 'proc' | 'origins'>> {
  const call = async (path: string, body: unknown, key = adminToken): Promise<any> => {
    const response = await fetch(`${origin}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() }, body: JSON.stringify(body) });
    if (response.status >= 300) throw new Error(`set-up ${path}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  const noCaps = { operationsPerMonth: null, agentsAtOnce: null, requestsPerMinute: null, activeRuns: null, activeTasks: null };
  const org = await call('/admin/v1/orgs', { name: 'torture', plan: 'ENTERPRISE', limits: noCaps });
  const space = await call(`/admin/v1/orgs/${org.id}/spaces`, { name: 'torture' });
  const { secret: apiKey } = await call(`/admin/v1/orgs/${org.id}/keys`, { name: 'torture' });
  const v1 = `/v1/spaces/${space.id}`;
  const mailbox = await call(`${v1}/mailboxes`, { name: 'work' }, apiKey);
  const budget = await call(`${v1}/budgets`, { name: 'spend', currency: 'USD', scale: 2, limitMinor: '100000000' }, apiKey);
  const allowance = await call(`${v1}/allowances`, { name: 'calls', unitsLimit: 30, windowSeconds: 2 }, apiKey);
  return { apiKey, spaceId: space.id, scopeId: randomUUID(), mailboxId: mailbox.id, budgetId: budget.id, allowanceId: allowance.id, claimKeys: ['lock-a', 'lock-b'], historyDir, seed, leaseSeconds };
}

async function injectFaults(options: TortureOptions, servers: Servers, clients: ManagedProcess[], log: (line: string) => void): Promise<Partial<Record<FaultKind, number>>> {
  const kinds = options.faults ?? [...storeFaults[options.store]];
  const deadline = Date.now() + options.seconds * 1000;
  const lastDeadline = deadline + options.seconds * 1000;
  const counts: Partial<Record<FaultKind, number>> = {};
  const owed = (): boolean => Object.entries(options.atLeast ?? {}).some(([kind, n]) => (counts[kind as FaultKind] ?? 0) < n);
  const endsAt = (): number => (owed() ? lastDeadline : deadline);
  for (const fault of faultSchedule(options.seed, kinds, 2 * options.seconds, options.cycleFaults)) {
    await sleep(Math.min(fault.gapMs, Math.max(0, endsAt() - Date.now())));
    if (Date.now() >= endsAt()) break;
    log(`  ${new Date().toISOString()} ${describe(fault, servers, clients)}`);
    await inject(fault, servers, clients);
    counts[fault.kind] = (counts[fault.kind] ?? 0) + 1;
  }
  return counts;
}

const pausable = (clients: ManagedProcess[]): ManagedProcess[] => clients.filter((c) => /^(worker|raw-worker|claimer)\d/.test(c.name));

function targetOf(fault: Fault, servers: Servers, clients: ManagedProcess[]): ManagedProcess {
  const pool = fault.kind.startsWith('server') ? servers.list.map((s) => s.process) : fault.kind === 'client-pause' ? pausable(clients) : clients;
  return pool[fault.target % pool.length]!;
}

function describe(fault: Fault, servers: Servers, clients: ManagedProcess[]): string {
  if (fault.kind.startsWith('pg')) return fault.kind;
  return `${fault.kind} ${targetOf(fault, servers, clients).name}${fault.durationMs ? ` for ${fault.durationMs} ms` : ''}`;
}

async function inject(fault: Fault, servers: Servers, clients: ManagedProcess[]): Promise<void> {
  const cluster = servers.cluster;
  switch (fault.kind) {
    case 'server-kill': {
      const target = targetOf(fault, servers, clients);
      await target.kill();
      await sleep(fault.durationMs);
      await target.start();
      await waitReady(servers.list.find((s) => s.process === target)!.origin);
      return;
    }
    case 'server-pause':
    case 'client-pause': {
      const target = targetOf(fault, servers, clients);
      target.pause();
      await sleep(fault.durationMs);
      target.resume();
      return;
    }
    case 'client-kill': {
      const target = targetOf(fault, servers, clients);
      await target.kill();
      await sleep(200);
      await target.start();
      return;
    }
    case 'pg-restart-fast':
    case 'pg-restart-immediate':
      await cluster!.restart(fault.kind === 'pg-restart-fast' ? 'fast' : 'immediate');
      return;
    case 'pg-cut':
      await cluster!.cutConnections();
      return;
  }
}

/**
 * The outage phase: PostgreSQL stopped (fast shutdown) and kept down for `seconds` while every
 * client goes on, then started again. The window goes into the history as the orchestrator's note,
 * where the outage check finds it (checks/outage.ts). It starts once `pg_ctl stop` has returned
 * and ends before `pg_ctl start` is called: within it no connection to PostgreSQL can succeed.
 */
async function storeOutage(cluster: PostgresCluster, servers: Servers, seconds: number, historyDir: string, log: (line: string) => void): Promise<void> {
  log(`  ${new Date().toISOString()} pg-outage for ${seconds} s`);
  await cluster.stop('fast');
  const fromMs = Date.now();
  await sleep(seconds * 1000);
  const toMs = Date.now();
  await cluster.start();
  new HistoryWriter(join(historyDir, 'orchestrator.jsonl'), 'orchestrator').note(outageNote, { fromMs, toMs });
  for (const s of servers.list) await waitReady(s.origin);
}

/** After the faults: everything paused resumes, everything down is up and ready. */
async function heal(servers: Servers, clients: ManagedProcess[]): Promise<void> {
  for (const p of [...servers.list.map((s) => s.process), ...clients]) if (p.paused) p.resume();
  for (const s of servers.list) {
    if (!s.process.running) await s.process.start();
    await waitReady(s.origin);
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export const removeWorkDir = (dir: string): void => rmSync(dir, { recursive: true, force: true });
