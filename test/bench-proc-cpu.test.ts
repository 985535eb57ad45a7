/**
 * The cost benchmark's CPU reading (server/bench/cost/proc-cpu.ts): a process's own time, and a
 * process tree's time with its live children and the children it has already reaped, which is
 * how the PostgreSQL cluster's backends that end mid-run stay counted.
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { processCpuMs, processTreeCpuMs } from '../server/bench/cost/proc-cpu';

/** A node child that burns `ms` of its own CPU, says so, then idles until killed (or exits when `exit`). */
const burner = (ms: number, exit: boolean): string =>
  `const u = () => { const c = process.cpuUsage(); return (c.user + c.system) / 1000; }; const s = u(); while (u() - s < ${ms}) {} ` +
  (exit ? '' : `console.log('burnt'); setInterval(() => {}, 1000);`);

function burnHere(ms: number): void {
  const used = (): number => {
    const c = process.cpuUsage();
    return (c.user + c.system) / 1000;
  };
  const start = used();
  while (used() - start < ms) {
    // busy on purpose
  }
}

describe.runIf(process.platform === 'linux')('CPU time from /proc', () => {
  it('reads a process own CPU time as it grows', () => {
    const before = processCpuMs(process.pid);
    burnHere(300);
    // Ticks are 10 ms: allow two of them.
    expect(processCpuMs(process.pid) - before).toBeGreaterThanOrEqual(280);
  });

  it('counts a child that has ended and been reaped in its parent tree', () => {
    const before = processTreeCpuMs(process.pid);
    execFileSync(process.execPath, ['-e', burner(300, true)]);
    expect(processTreeCpuMs(process.pid) - before).toBeGreaterThanOrEqual(280);
  });

  it('counts a live child in its parent tree', async () => {
    const before = processTreeCpuMs(process.pid);
    const child = spawn(process.execPath, ['-e', burner(300, false)], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      await once(child.stdout!, 'data');
      expect(processTreeCpuMs(process.pid) - before).toBeGreaterThanOrEqual(280);
    } finally {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });

  it('fails loudly for a process that is gone', () => {
    expect(() => processCpuMs(2 ** 22 + 12_345)).toThrow(/gone/);
  });
});
