/**
 * CPU time of processes, read from /proc/<pid>/stat (utime + stime, in clock ticks): what each
 * process of a benchmark run cost the machine, whatever it was waiting for meanwhile.
 *
 * A PostgreSQL cluster is the postmaster and its children (backends, autovacuum, checkpointer,
 * WAL writer, ...). A child that exits between two readings is not lost: once the postmaster
 * reaps it, its time is added to the postmaster's cutime + cstime. So the cluster's CPU is the
 * postmaster's own time, plus its reaped children's, plus each live child's own time.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's times (USER_HZ, 100 on Linux/x86). */
const ticksPerSecond = ((): number => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

interface Stat {
  ppid: number;
  /** utime + stime of the process itself, in ticks. */
  ownTicks: number;
  /** cutime + cstime: children it has waited for, in ticks. */
  reapedTicks: number;
}

/** Undefined when the process is gone (or /proc is not there). */
function readStat(pid: number): Stat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name, in parentheses, may hold spaces: fields are counted after its last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): ppid is field 4, utime 14, stime 15, cutime 16, cstime 17.
  const n = (field: number): number => Number(fields[field - 3]);
  return { ppid: n(4), ownTicks: n(14) + n(15), reapedTicks: n(16) + n(17) };
}

const toMs = (ticks: number): number => (ticks * 1000) / ticksPerSecond;

/** CPU milliseconds of one process so far (all its threads); throws when it is gone. */
export function processCpuMs(pid: number): number {
  const stat = readStat(pid);
  if (!stat) throw new Error(`process ${pid} is gone: its CPU time cannot be read`);
  return toMs(stat.ownTicks);
}

/** CPU milliseconds of a process and every child it has (or had and reaped): a PostgreSQL cluster from its postmaster. */
export function processTreeCpuMs(rootPid: number): number {
  const root = readStat(rootPid);
  if (!root) throw new Error(`process ${rootPid} is gone: its CPU time cannot be read`);
  let ticks = root.ownTicks + root.reapedTicks;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (stat?.ppid === rootPid) ticks += stat.ownTicks + stat.reapedTicks;
  }
  return toMs(ticks);
}

/** The parent of a process (the postmaster of a backend). */
export function parentPid(pid: number): number {
  const stat = readStat(pid);
  if (!stat) throw new Error(`process ${pid} is gone`);
  return stat.ppid;
}

/**
 * CPU milliseconds the whole machine has been busy (all cores, every process: /proc/stat's
 * user, nice, system, irq, softirq and steal): what else ran beside a measured run shows as
 * this minus the run's own processes.
 */
export function machineBusyMs(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return toMs(user! + nice! + system! + irq! + softirq! + (steal ?? 0));
}
