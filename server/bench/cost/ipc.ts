/**
 * The bench's child processes: a TypeScript module started with node (tsx's loader, the source
 * condition), answering commands over the IPC channel. Each part of a run is its own process so
 * /proc can tell what each cost: the parent only sends commands and waits.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

type Handlers = Record<string, (argument: any) => Promise<unknown>>;

interface Request {
  id: number;
  command: string;
  argument: unknown;
}

type Reply = { id: number; result: unknown } | { id: number; error: string } | { ready: true };

/** node flags of every child: TypeScript through tsx, workspace packages from their source. */
export const tsNodeFlags = ['--import', import.meta.resolve('tsx'), '--conditions=@baton/source'];

/** Child side: answers each command with its handler's result; `ready` once listening. */
export function serveCommands(handlers: Handlers): void {
  const send = (reply: Reply): void => void process.send!(reply);
  process.on('message', (request: Request) => {
    const handler = handlers[request.command];
    if (!handler) return send({ id: request.id, error: `unknown command ${request.command}` });
    handler(request.argument).then(
      (result) => send({ id: request.id, result }),
      (error: unknown) => send({ id: request.id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
    );
  });
  // The parent going away (Ctrl-C, a failure) ends the child too.
  process.on('disconnect', () => process.exit(0));
  send({ ready: true });
}

export interface CommandChild {
  pid: number;
  call<T>(command: string, argument?: unknown): Promise<T>;
  /** Ends the child and waits for its exit. */
  stop(): Promise<void>;
}

/** Starts `moduleUrl` as a child process and resolves once it is ready for commands. */
export async function startCommandChild(moduleUrl: string, env: Record<string, string> = {}): Promise<CommandChild> {
  const child: ChildProcess = fork(fileURLToPath(moduleUrl), [], { execArgv: tsNodeFlags, env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  let nextId = 0;
  let exited = false;
  const ready = new Promise<void>((resolve, reject) => {
    child.on('message', (reply: Reply) => {
      if ('ready' in reply) return resolve();
      const waiter = pending.get(reply.id);
      pending.delete(reply.id);
      if ('error' in reply) waiter?.reject(new Error(`child ${child.pid}: ${reply.error}`));
      else waiter?.resolve(reply.result);
    });
    child.once('exit', (code) => {
      exited = true;
      const error = new Error(`child ${moduleUrl} exited (code ${code})`);
      reject(error);
      for (const waiter of pending.values()) waiter.reject(error);
      pending.clear();
    });
  });
  await ready;
  return {
    pid: child.pid!,
    call: <T>(command: string, argument?: unknown) =>
      new Promise<T>((resolve, reject) => {
        if (exited) return reject(new Error(`child ${moduleUrl} has exited`));
        const id = nextId++;
        pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
        child.send({ id, command, argument } satisfies Request);
      }),
    stop: async () => {
      if (exited) return;
      const gone = once(child, 'exit');
      child.disconnect();
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(killer);
    },
  };
}
