/**
 * The Baton server as `npm start` runs it (server/src/main.ts: background sweeps, webhooks,
 * limits sync, the PgNotifier on PostgreSQL), in a child process of its own, configured by
 * environment (server/src/config.ts); and a tenant made through the admin API.
 */
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Endpoint, Queue } from '../tasks';
import { tsNodeFlags } from './ipc';

const mainPath = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

/** A port nobody listens on now (the OS picks it; a tiny window before the child binds it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

export interface BatonServer {
  pid: number;
  baseUrl: string;
  adminToken: string;
  /** SIGTERM, as an operator stops it: drains, closes its pool, exits. */
  stop(): Promise<void>;
}

/** `store`: DATABASE_URL for PostgreSQL, or a data directory for embedded PGlite; `settings`: more environment (the pooler modes'). */
export async function startBatonServer(store: { databaseUrl: string } | { dataDir: string }, settings: Readonly<Record<string, string>> = {}): Promise<BatonServer> {
  const port = await freePort();
  const adminToken = randomBytes(24).toString('hex');
  const env = {
    ...process.env,
    HOST: '127.0.0.1',
    PORT: String(port),
    BATON_ADMIN_TOKEN: adminToken,
    BATON_BOOTSTRAP: 'off',
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
    ...('databaseUrl' in store ? { DATABASE_URL: store.databaseUrl } : { DATABASE_URL: '', BATON_DATA_DIR: store.dataDir }),
    ...settings,
  };
  // BENCH_SERVER_CPU_PROF=<dir>: the server writes a V8 CPU profile there when it stops (open it
  // in Chrome's DevTools, or summarise it with server/bench/cpu-profile-summary.ts).
  const profile = process.env.BENCH_SERVER_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_SERVER_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...profile, ...tsNodeFlags, mainPath], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  let exitCode: number | null | undefined;
  const exited = once(child, 'exit').then(([code]) => (exitCode = code as number | null));
  const baseUrl = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    if (exitCode !== undefined) return;
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(killer);
  };
  for (let tries = 0; ; tries++) {
    if (exitCode !== undefined) throw new Error(`the Baton server exited at start (code ${exitCode})`);
    const ok = await fetch(`${baseUrl}/readyz`).then((r) => r.ok, () => false);
    if (ok) break;
    if (tries > 600) {
      await stop();
      throw new Error('the Baton server did not become ready within 60 s');
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { pid: child.pid!, baseUrl, adminToken, stop };
}

async function call(url: string, token: string, method: string, body: unknown, expected: number[]): Promise<any> {
  const res = await fetch(url, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() }, body: JSON.stringify(body) });
  const text = await res.text();
  if (!expected.includes(res.status)) throw new Error(`${method} ${url}: expected ${expected.join('/')}, got ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

/** An ENTERPRISE org without caps, a space whose backlog cap holds the run, a key, and a mailbox of `backlogLimit`. */
export async function createTenant(server: BatonServer, backlogLimit: number): Promise<{ endpoint: Endpoint; queue: Queue }> {
  const admin = (method: string, path: string, body: unknown) => call(`${server.baseUrl}/admin/v1${path}`, server.adminToken, method, body, [201]);
  const noCaps = { operationsPerMonth: null, agentsAtOnce: null, requestsPerMinute: null, activeRuns: null, activeTasks: null };
  const org = await admin('POST', '/orgs', { name: 'bench', plan: 'ENTERPRISE', limits: noCaps });
  const space = await admin('POST', `/orgs/${org.id}/spaces`, { name: 'bench' });
  const { secret: key } = await admin('POST', `/orgs/${org.id}/keys`, { name: 'bench' });
  const endpoint: Endpoint = { baseUrl: server.baseUrl, spaceId: space.id, key };
  const tenant = (method: string, path: string, body: unknown, expected: number[]) => call(`${server.baseUrl}/v1/spaces/${space.id}${path}`, key, method, body, expected);
  await tenant('PUT', '/limits', { maxBacklog: 1_000_000 }, [200]);
  const runId = `cost-${randomUUID().slice(0, 8)}`;
  const mailbox = await tenant('POST', '/mailboxes', { name: runId, backlogLimit }, [201]);
  return { endpoint, queue: { runId, mailboxId: mailbox.id, scopeId: randomUUID() } };
}
