/**
 * Start-up of the compiled server on the embedded store (docs/embedded-store.md, "Start-up"):
 * `npx tsx server/bench/start-up.ts [--rounds N] [--later N]`, after `npm run build`.
 *
 * Each round starts `node server/dist/main.js` on a new data directory (the first start), stops
 * it with SIGTERM, then starts it `later` more times on the same directory. For each start it
 * prints the time until "baton is serving", the CPU the process used until then (user + system:
 * steadier than wall time on a shared machine) and its peak resident memory (VmHWM). Linux only:
 * it reads /proc.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

interface StartUp {
  wallMs: number;
  cpuMs: number;
  peakMiB: number;
}

const root = new URL('../..', import.meta.url).pathname;
const clockTicksPerSecond = 100; // USER_HZ, the unit of utime and stime in /proc/<pid>/stat

function measure(pid: number, wallMs: number): StartUp {
  // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const cpuMs = ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicksPerSecond;
  const peakKiB = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
  return { wallMs: Math.round(wallMs), cpuMs: Math.round(cpuMs), peakMiB: Math.round(peakKiB / 1024) };
}

/** One start until "baton is serving", measured, then SIGTERM and the exit awaited. */
function startOnce(dataDir: string): Promise<StartUp> {
  const started = performance.now();
  const env = { ...process.env, PORT: '0', BATON_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'info', LOG_FORMAT: 'json' };
  const child = spawn(process.execPath, ['server/dist/main.js'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    let result: StartUp | undefined;
    child.stderr.on('data', (d) => (output += d));
    child.stdout.on('data', (d) => {
      output += d;
      if (result || !output.includes('baton is serving')) return;
      result = measure(child.pid!, performance.now() - started);
      child.kill('SIGTERM');
    });
    child.once('exit', (code) => (result && code === 0 ? resolve(result) : reject(new Error(`server exited ${code}:\n${output}`))));
  });
}

const format = (s: StartUp): string => `${String(s.wallMs).padStart(6)} ms  ${String(s.cpuMs).padStart(6)} ms CPU  ${String(s.peakMiB).padStart(4)} MiB peak`;

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, later: { type: 'string', default: '2' } } });
  const parent = mkdtempSync(join(tmpdir(), 'baton-start-up-'));
  try {
    for (let round = 1; round <= Number(values.rounds); round++) {
      const dataDir = join(parent, `round-${round}`);
      console.log(`round ${round} first  ${format(await startOnce(dataDir))}`);
      for (let n = 0; n < Number(values.later); n++) console.log(`round ${round} later  ${format(await startOnce(dataDir))}`);
    }
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
}

await main();
