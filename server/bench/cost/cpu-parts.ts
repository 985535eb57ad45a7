/**
 * A run's CPU split by process: the Baton server, the PostgreSQL cluster (postmaster and every
 * child), the connection pooler (PgBouncer, in the pooler modes), and the clients (the load
 * generator, or graphile-worker's own process). A part the run does not have (no server beside
 * graphile-worker, no cluster under PGlite, no pooler) is NaN.
 */
import { machineBusyMs, processCpuMs, processTreeCpuMs } from './proc-cpu';

export interface CpuParts {
  serverMs: number;
  postgresMs: number;
  poolerMs: number;
  clientsMs: number;
  /** The whole machine's busy time, every process included (to tell how much else ran). */
  machineMs: number;
}

export interface RunProcesses {
  server?: number;
  postmaster?: number;
  pooler?: number;
  clients: number[];
}

export function readCpu(processes: RunProcesses): CpuParts {
  return {
    serverMs: processes.server === undefined ? NaN : processCpuMs(processes.server),
    postgresMs: processes.postmaster === undefined ? NaN : processTreeCpuMs(processes.postmaster),
    poolerMs: processes.pooler === undefined ? NaN : processCpuMs(processes.pooler),
    clientsMs: processes.clients.reduce((sum, pid) => sum + processCpuMs(pid), 0),
    machineMs: machineBusyMs(),
  };
}

export function cpuBetween(from: CpuParts, to: CpuParts): CpuParts {
  return { serverMs: to.serverMs - from.serverMs, postgresMs: to.postgresMs - from.postgresMs, poolerMs: to.poolerMs - from.poolerMs, clientsMs: to.clientsMs - from.clientsMs, machineMs: to.machineMs - from.machineMs };
}

export function cpuSum(a: CpuParts, b: CpuParts): CpuParts {
  return { serverMs: a.serverMs + b.serverMs, postgresMs: a.postgresMs + b.postgresMs, poolerMs: a.poolerMs + b.poolerMs, clientsMs: a.clientsMs + b.clientsMs, machineMs: a.machineMs + b.machineMs };
}

/** Every part the run has; a missing part counts as none. */
export const cpuTotalMs = (parts: CpuParts): number => [parts.serverMs, parts.postgresMs, parts.poolerMs, parts.clientsMs].filter(Number.isFinite).reduce((a, b) => a + b, 0);

export const noCpu: CpuParts = { serverMs: 0, postgresMs: 0, poolerMs: 0, clientsMs: 0, machineMs: 0 };

/** What the rest of the machine used meanwhile: busy time not spent by the run's processes. */
export const othersMs = (parts: CpuParts): number => parts.machineMs - cpuTotalMs(parts);
