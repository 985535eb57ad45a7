import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import type { ProcessBug } from './bugs';
import { ManagedProcess, sourceArgv } from './processes';
import type { ClientConfig, RoleName } from './roles/context';

/** The processes of a run: Baton servers on fixed loopback ports, and client roles. */

export const adminToken = `torture-admin-${randomUUID()}`;

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface ServerSpec {
  store: { databaseUrl: string } | { dataDir: string };
  plant?: ProcessBug;
  logDir: string;
}

/** A server as `npm start` runs it (server/dist/main.js), or from source with a bug planted. */
export async function serverProcess(name: string, spec: ServerSpec): Promise<{ process: ManagedProcess; origin: string }> {
  const port = await freePort();
  const env = (): Record<string, string> => ({
    HOST: '127.0.0.1',
    PORT: String(port),
    BATON_ADMIN_TOKEN: adminToken,
    BATON_BOOTSTRAP: 'off',
    // info: every request is logged, so the secret scan reads what operators' logs hold.
    LOG_LEVEL: 'info',
    ...('databaseUrl' in spec.store ? { DATABASE_URL: spec.store.databaseUrl } : { BATON_DATA_DIR: spec.store.dataDir, DATABASE_URL: '' }),
    ...(spec.plant ? { TORTURE_PLANT: spec.plant } : {}),
  });
  const argv = (): string[] => (spec.plant ? sourceArgv('torture/planted-server.ts') : ['server/dist/main.js']);
  return { process: new ManagedProcess(name, argv, env, spec.logDir), origin: `http://127.0.0.1:${port}` };
}

/** Polls /readyz until the server answers 200 (60 s at most: PostgreSQL may be recovering). */
export async function waitReady(origin: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const response = await fetch(`${origin}/readyz`, { signal: AbortSignal.timeout(1_000) });
      if (response.status === 200) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`server at ${origin} was not ready within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export function clientProcess(name: string, role: RoleName, base: Omit<ClientConfig, 'role' | 'proc'>, logDir: string): ManagedProcess {
  const process: ManagedProcess = new ManagedProcess(name, () => sourceArgv('torture/client-main.ts'), () => ({ TORTURE_CLIENT: JSON.stringify({ ...base, role, proc: `${name}.${process.incarnation}` }) }), logDir);
  return process;
}

/** How many processes of each role a run starts. */
export const fleet: Record<RoleName, number> = { producer: 2, worker: 2, 'raw-worker': 2, spender: 1, claimer: 2, consumer: 1, reader: 1 };
