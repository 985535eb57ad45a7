import { spawn, type ChildProcess } from 'node:child_process';

/** A Baton server run as `npm start` runs it: the compiled `server/dist/main.js` (npm test builds first). */
export interface ServerProcess {
  child: ChildProcess;
  /** Everything it wrote to stdout and stderr so far. */
  output: () => string;
  /** Where it listens, from its "baton is serving" log line. */
  address: string;
}

const root = new URL('../..', import.meta.url).pathname;

/** Every server process started and not yet seen to exit: `stopAll` ends them whatever a test did. */
const running = new Set<ChildProcess>();

const startLimitMs = 120_000;

/** Another way to start it than `node server/dist/main.js` in the repository: e.g. an installed package's binary. */
export interface HowToStart {
  command?: string[];
  cwd?: string;
}

/**
 * Starts a server with `env` over this process's environment and waits for its address. The
 * limit is generous on purpose: a first start on the embedded store on a busy machine can take
 * many times its idle duration, and a server that fails to start exits, which ends the wait at once.
 */
export async function startServerProcess(env: Record<string, string>, how: HowToStart = {}): Promise<ServerProcess> {
  const [command, ...args] = how.command ?? [process.execPath, 'server/dist/main.js'];
  const child = spawn(command!, args, { cwd: how.cwd ?? root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), startLimitMs);
    child.stdout!.on('data', () => {
      const match = /"address":"(http:\/\/[^"]+)"/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited ${code}:\n${output}`));
    });
  });
  return { child, output: () => output, address };
}

export function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** SIGTERM (the drain of docs/design/0002-graceful-drain.md), then SIGKILL if it has not exited within `graceMs`; answers the exit code. */
export async function stopServerProcess(child: ChildProcess, graceMs = 15_000): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const done = exited(child);
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  const code = await done;
  clearTimeout(timer);
  return code;
}

/** SIGKILL: a crash, nothing drained. */
export async function killServerProcess(child: ChildProcess): Promise<void> {
  const done = exited(child);
  child.kill('SIGKILL');
  await done;
}

/** Ends every server process still running (for afterAll). */
export async function stopAllServerProcesses(): Promise<void> {
  await Promise.all([...running].map((child) => stopServerProcess(child)));
}
