import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { homedir } from 'node:os';
import type { TestProject } from 'vitest/node';

/**
 * Gives the test run a PostgreSQL when it has none: without DATABASE_URL, and with a Docker
 * engine in reach, starts one container for the whole run and hands its URL to the test
 * workers (test/support/databases.ts postgresUrl()). BATON_TESTCONTAINERS=off skips this.
 * Without Docker it costs a few stat() calls; testcontainers is only loaded when needed.
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (process.env.DATABASE_URL || process.env.BATON_TESTCONTAINERS === 'off') return undefined;
  if (!(await dockerInReach())) return undefined;
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  try {
    const container = await new PostgreSqlContainer('postgres:17-alpine').start();
    project.provide('postgresUrl', container.getConnectionUri());
    return async () => {
      await container.stop();
    };
  } catch (error) {
    // A socket without a working engine behind it: run without PostgreSQL, but say so.
    console.warn(`global-setup: no PostgreSQL container (${error instanceof Error ? error.message : String(error)}); postgres targets are left out`);
    return undefined;
  }
}

async function dockerInReach(): Promise<boolean> {
  const host = process.env.DOCKER_HOST;
  if (host) {
    if (host.startsWith('unix://')) return existsSync(host.slice('unix://'.length));
    if (host.startsWith('tcp://')) return tcpOpen(new URL(host));
    return true; // ssh:// and the like: let testcontainers try
  }
  const home = homedir();
  const runtimeDir = process.env.XDG_RUNTIME_DIR ?? (process.getuid ? `/run/user/${process.getuid()}` : undefined);
  const sockets = ['/var/run/docker.sock', `${home}/.docker/run/docker.sock`, `${home}/.docker/desktop/docker.sock`, runtimeDir && `${runtimeDir}/docker.sock`];
  return sockets.some((path) => path && existsSync(path));
}

function tcpOpen(url: URL): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: url.hostname, port: Number(url.port || 2375), timeout: 1000 });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}
