import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;

/**
 * A process the run can kill, pause and start again under the same name: a Baton server (the
 * compiled `npm start`, or the source server with a planted bug) or a client role. Its output
 * goes to `<logDir>/<name>.log`, appended across incarnations.
 */
export class ManagedProcess {
  private child: ChildProcess | undefined;
  private log: WriteStream;
  incarnation = 0;
  paused = false;

  constructor(
    readonly name: string,
    private readonly argv: () => string[],
    private readonly env: () => Record<string, string>,
    logDir: string,
  ) {
    this.log = createWriteStream(join(logDir, `${name}.log`), { flags: 'a' });
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts a fresh incarnation; `ready` (if given) waits for a line of its output to match. */
  async start(ready?: RegExp, timeoutMs = 30_000): Promise<void> {
    this.incarnation++;
    this.paused = false;
    const child = spawn(process.execPath, this.argv(), { cwd: root, env: { ...process.env, ...this.env() }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    let output = '';
    child.stdout!.on('data', (d: Buffer) => {
      this.log.write(d);
      if (ready) output += d.toString();
    });
    child.stderr!.on('data', (d: Buffer) => this.log.write(d));
    if (!ready) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name} did not get ready in ${timeoutMs} ms`)), timeoutMs);
      const onData = (): void => {
        if (!ready.test(output)) return;
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        output = '';
        resolve();
      };
      child.stdout!.on('data', onData);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${this.name} exited ${code} before it was ready`));
      });
    });
  }

  kill(): Promise<void> {
    return this.signal('SIGKILL');
  }

  /** SIGTERM: servers drain, clients finish their step; SIGKILL after `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.running) return;
    if (this.paused) this.resume();
    const timer = setTimeout(() => this.child?.kill('SIGKILL'), graceMs);
    await this.signal('SIGTERM');
    clearTimeout(timer);
  }

  pause(): void {
    if (!this.running) return;
    this.child!.kill('SIGSTOP');
    this.paused = true;
  }

  resume(): void {
    if (!this.running) return;
    this.child!.kill('SIGCONT');
    this.paused = false;
  }

  private signal(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return Promise.resolve();
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    if (signal === 'SIGKILL' && this.paused) this.paused = false;
    child.kill(signal);
    return exited;
  }

  close(): void {
    this.log.end();
  }
}

/** Node's arguments to run a TypeScript entry from source, as `npm run sim` does. */
export const sourceArgv = (entry: string): string[] => ['--conditions=@baton/source', '--import', 'tsx', entry];
