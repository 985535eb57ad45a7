import { msFromIso } from '@baton/core';

/** Everything the server reads from its environment, read once at start-up (decisions §1). */
export interface Config {
  host: string;
  port: number;
  /** PostgreSQL through `pg` when set; embedded PGlite under dataDir otherwise. */
  databaseUrl: string | undefined;
  dataDir: string;
  bootstrap: boolean;
  clock: 'system' | 'manual';
  /** Where a manual clock starts; the wall clock's reading at start-up when unset. */
  clockStartMs: number | undefined;
  adminToken: string | undefined;
  logLevel: string;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const port = Number(env.PORT ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`PORT must be 0 to 65535, got ${env.PORT}`);
  const clock = env.BATON_CLOCK ?? 'system';
  if (clock !== 'system' && clock !== 'manual') throw new ConfigError(`BATON_CLOCK must be system or manual, got ${clock}`);
  const bootstrap = env.BATON_BOOTSTRAP ?? 'on';
  if (bootstrap !== 'on' && bootstrap !== 'off') throw new ConfigError(`BATON_BOOTSTRAP must be on or off, got ${bootstrap}`);
  let clockStartMs: number | undefined;
  if (env.BATON_CLOCK_START) {
    try {
      clockStartMs = msFromIso(env.BATON_CLOCK_START);
    } catch {
      throw new ConfigError(`BATON_CLOCK_START must be an ISO 8601 date-time, got ${env.BATON_CLOCK_START}`);
    }
  }
  return {
    host: env.HOST ?? '127.0.0.1',
    port,
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: env.BATON_DATA_DIR ?? './.baton/data',
    bootstrap: bootstrap === 'on',
    clock,
    clockStartMs,
    adminToken: env.BATON_ADMIN_TOKEN || undefined,
    logLevel: env.LOG_LEVEL ?? 'info',
  };
}
