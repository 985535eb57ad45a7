import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The examples as docs/runtime.md tells a user to run them: the server as `npm start` runs it (a
 * real process on the embedded store, printing its export lines), then runtime/examples/worker.ts
 * and runtime/examples/submitter.ts as their own processes with those exports. Each child is node
 * itself with tsx's loader (not the tsx wrapper), so a signal reaches the program, not a wrapper.
 */
const root = new URL('../..', import.meta.url).pathname;

/**
 * How long a step may take before the test calls it hung. Every wait below ends as soon as its
 * step is done (or its process exits), so this is no budget a busy machine races: an embedded
 * first start that takes 2 s idle took 10 to 30 s beside other test runs.
 */
const patienceMs = 120_000;
const dataDir = mkdtempSync(join(tmpdir(), 'baton-examples-'));
const children: ChildProcess[] = [];

afterAll(() => {
  // Whatever a failed test left running is killed: no process outlives the file.
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

interface Child {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function run(script: string, args: string[], env: Record<string, string>): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, output: () => output, exited };
}

/** Resolves with the first match of `pattern` in the child's output; rejects if it exits or times out first. */
function waitForOutput(started: Child, pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const check = (): boolean => {
      const match = pattern.exec(started.output());
      if (match) {
        clearTimeout(timer);
        started.child.stdout!.off('data', check);
        resolve(match);
      }
      return Boolean(match);
    };
    const timer = setTimeout(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${started.output()}`)), timeoutMs);
    if (check()) return;
    started.child.stdout!.on('data', check);
    void started.exited.then(({ code }) => {
      if (!check()) {
        clearTimeout(timer);
        reject(new Error(`exited ${code} before ${pattern}:\n${started.output()}`));
      }
    });
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms).unref())]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The processes below `pid`, from `ps` (empty where there is no ps). */
function descendantsOf(pid: number): number[] {
  let table: number[][];
  try {
    table = execFileSync('ps', ['-A', '-o', 'pid=,ppid='], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map((line) => line.trim().split(/\s+/).map(Number));
  } catch {
    return [];
  }
  const found: number[] = [];
  const parents = [pid];
  while (parents.length > 0) {
    const parent = parents.pop()!;
    for (const [child, ppid] of table) if (ppid === parent && child !== undefined) found.push(child), parents.push(child);
  }
  return found;
}

describe('the runtime examples against `npm start`', () => {
  it('a worker and a submitter complete every task; SIGTERM drains both processes to exit 0', async () => {
    const server = run('server/dist/main.js', [], { PORT: '0', BATON_DATA_DIR: join(dataDir, 'data'), DATABASE_URL: '', LOG_LEVEL: 'info' });
    // Started means ready: "baton is serving" comes after the store is open and migrated.
    const url = (await waitForOutput(server, /"address":"(http:\/\/[^"]+)".*"baton is serving"/, patienceMs))[1]!;
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    // The banner with the export lines follows the "serving" log line.
    const space = (await waitForOutput(server, /export BATON_SPACE=(\S+)/, patienceMs))[1]!;
    const key = (await waitForOutput(server, /export BATON_KEY=(\S+)/, patienceMs))[1]!;
    const env = { BATON_URL: url, BATON_SPACE: space, BATON_KEY: key, BATON_SCOPE: randomUUID(), CONCURRENCY: '3' };

    const worker = run('runtime/examples/worker.ts', [], env);
    await waitForOutput(worker, /admitting from mailbox "examples"/, patienceMs);

    const count = 6;
    const submitter = run('runtime/examples/submitter.ts', [String(count)], env);
    const submitted = await withTimeout(submitter.exited, patienceMs, 'the submitter');
    expect(submitted, submitter.output()).toEqual({ code: 0, signal: null });
    const results = [...submitter.output().matchAll(/^example-\w+-(\d+): (\w+) (.*) \(attempts (\d+)\)$/gm)].map((m) => ({
      index: Number(m[1]),
      state: m[2],
      outcome: JSON.parse(m[3]!),
      attempts: Number(m[4]),
    }));
    expect(results.sort((a, b) => a.index - b.index)).toEqual(
      Array.from({ length: count }, (_, i) => ({ index: i, state: 'SUCCEEDED', outcome: `HELLO ${i}`, attempts: 1 })),
    );
    expect(submitter.output()).toMatch(new RegExp(`^${count} tasks in \\d+ ms$`, 'm'));
    expect(worker.output().match(/^completed /gm)).toHaveLength(count);

    // Everything the two long-running processes started (tsx's esbuild service, if any).
    const tree = [server, worker].flatMap(({ child }) => [child.pid!, ...descendantsOf(child.pid!)]);
    // Ctrl-C / SIGTERM: the worker drains (nothing in flight) and exits on its own.
    worker.child.kill('SIGTERM');
    expect(await withTimeout(worker.exited, patienceMs, 'the worker drain'), worker.output()).toEqual({ code: 0, signal: null });
    expect(worker.output()).toMatch(new RegExp(`drained: \\{[^}]*completed: ${count},`));
    expect(worker.output()).not.toMatch(/^(\w+ failed: |lease lost |nacked )/m);

    server.child.kill('SIGTERM');
    expect(await withTimeout(server.exited, patienceMs, 'the server drain'), server.output()).toEqual({ code: 0, signal: null });

    // A child's own helpers (tsx's esbuild service) exit a moment after it: wait, do not race them.
    await expect.poll(() => [...tree, submitter.child.pid!].filter(alive), { timeout: patienceMs, interval: 50 }).toEqual([]);
  }, 10 * patienceMs);
});
