import { msFromIso, plans, type Plan } from '@baton/core';
import { parseSecretKey, SealError } from './webhooks/seal';
import type { PoolMode } from './store/sql/pg-driver';

/** How log lines are written: JSON lines for machines, pino-pretty for people. */
export type LogFormat = 'json' | 'pretty';

/** Everything the server reads from its environment, read once at start-up (docs/design/0001-workspaces-and-start-up.md). */
export interface Config {
  host: string;
  port: number;
  /** PostgreSQL through `pg` when set; embedded PGlite under dataDir otherwise. */
  databaseUrl: string | undefined;
  /**
   * BATON_DATABASE_POOL_MODE (session): `transaction` when DATABASE_URL goes through a pooler in
   * transaction mode (statements unprepared, no session settings; store/sql/pg-driver.ts).
   */
  databasePoolMode: PoolMode;
  /**
   * BATON_NOTIFY_DATABASE_URL: where the notifier LISTENs and publishes, a URL whose connections
   * keep their sessions (PostgreSQL directly, or a session-mode pool) of DATABASE_URL's database.
   * Unset: DATABASE_URL. Required with BATON_DATABASE_POOL_MODE=transaction.
   */
  notifyDatabaseUrl: string | undefined;
  /** Connections of the store's pool on PostgreSQL (BATON_DB_POOL_MAX, 10); the notifier takes 3 more. */
  dbPoolMax: number;
  dataDir: string;
  bootstrap: boolean;
  /** BATON_BOOTSTRAP_PLAN: the bootstrap organization's plan; ENTERPRISE (the default) with no caps (docs/design/0022-one-team-defaults.md). */
  bootstrapPlan: Plan;
  clock: 'system' | 'manual';
  /** Where a manual clock starts; the wall clock's reading at start-up when unset. */
  clockStartMs: number | undefined;
  adminToken: string | undefined;
  /** BATON_METRICS_TOKEN: enables GET /metrics behind this bearer token (404 without it). */
  metricsToken: string | undefined;
  logLevel: string;
  /** LOG_FORMAT; unset: pretty on a terminal, JSON otherwise (host/logger.ts). */
  logFormat: LogFormat | undefined;
  /** BATON_SECRET_KEY (32 bytes base64): seals webhook signing secrets; without it destinations cannot be created. */
  secretKey: Buffer | undefined;
  /** BATON_WEBHOOK_ALLOW_PRIVATE=1: webhooks may reach private, loopback and link-local addresses. */
  webhookAllowPrivate: boolean;
  /** BATON_WEBHOOK_TIMEOUT_MS (10,000): one delivery attempt, connect to end of reply; a dispatcher's lease on a destination follows from it. */
  webhookTimeoutMs: number;
  /** BATON_CONSOLE (on): the operator console at /console (docs/console.md); off serves nothing there. */
  console: boolean;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const port = Number(env.PORT ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`PORT must be 0 to 65535, got ${env.PORT}`);
  const dbPoolMax = Number(env.BATON_DB_POOL_MAX ?? 10);
  if (!Number.isInteger(dbPoolMax) || dbPoolMax < 1 || dbPoolMax > 1000) throw new ConfigError(`BATON_DB_POOL_MAX must be 1 to 1000, got ${env.BATON_DB_POOL_MAX}`);
  const databasePoolMode = env.BATON_DATABASE_POOL_MODE || 'session';
  if (databasePoolMode !== 'session' && databasePoolMode !== 'transaction') {
    throw new ConfigError(`BATON_DATABASE_POOL_MODE must be session or transaction, got ${databasePoolMode}`);
  }
  const notifyDatabaseUrl = env.BATON_NOTIFY_DATABASE_URL || undefined;
  if (notifyDatabaseUrl !== undefined && !env.DATABASE_URL) throw new ConfigError('BATON_NOTIFY_DATABASE_URL is set but DATABASE_URL is not: the embedded store needs no notifier URL');
  // LISTEN is session state: through a transaction pooler it is gone with its transaction, and
  // long polls would wake only at their timeouts. Refused here rather than degraded later.
  if (databasePoolMode === 'transaction' && env.DATABASE_URL && notifyDatabaseUrl === undefined) {
    throw new ConfigError(
      'BATON_DATABASE_POOL_MODE=transaction needs BATON_NOTIFY_DATABASE_URL: LISTEN cannot go through a transaction pooler; set it to the same database reached directly or through a session-mode pool (docs/deploy.md, "Connection poolers")',
    );
  }
  const clock = env.BATON_CLOCK ?? 'system';
  if (clock !== 'system' && clock !== 'manual') throw new ConfigError(`BATON_CLOCK must be system or manual, got ${clock}`);
  const bootstrap = env.BATON_BOOTSTRAP ?? 'on';
  if (bootstrap !== 'on' && bootstrap !== 'off') throw new ConfigError(`BATON_BOOTSTRAP must be on or off, got ${bootstrap}`);
  const bootstrapPlan = (env.BATON_BOOTSTRAP_PLAN || 'ENTERPRISE').toUpperCase();
  if (!isPlan(bootstrapPlan)) throw new ConfigError(`BATON_BOOTSTRAP_PLAN must be one of ${plans.join(', ')}, got ${env.BATON_BOOTSTRAP_PLAN}`);
  const logFormat = env.LOG_FORMAT || undefined;
  if (logFormat !== undefined && logFormat !== 'json' && logFormat !== 'pretty') throw new ConfigError(`LOG_FORMAT must be json or pretty, got ${logFormat}`);
  let secretKey: Buffer | undefined;
  if (env.BATON_SECRET_KEY) {
    try {
      secretKey = parseSecretKey(env.BATON_SECRET_KEY);
    } catch (err) {
      throw new ConfigError(err instanceof SealError ? err.message : 'BATON_SECRET_KEY is not valid');
    }
  }
  const allowPrivate = env.BATON_WEBHOOK_ALLOW_PRIVATE ?? '0';
  if (allowPrivate !== '0' && allowPrivate !== '1') throw new ConfigError(`BATON_WEBHOOK_ALLOW_PRIVATE must be 0 or 1, got ${allowPrivate}`);
  const webhookTimeoutMs = Number(env.BATON_WEBHOOK_TIMEOUT_MS ?? 10_000);
  if (!Number.isInteger(webhookTimeoutMs) || webhookTimeoutMs < 100 || webhookTimeoutMs > 60_000) {
    throw new ConfigError(`BATON_WEBHOOK_TIMEOUT_MS must be 100 to 60000, got ${env.BATON_WEBHOOK_TIMEOUT_MS}`);
  }
  const consoleSetting = env.BATON_CONSOLE ?? 'on';
  if (consoleSetting !== 'on' && consoleSetting !== 'off') throw new ConfigError(`BATON_CONSOLE must be on or off, got ${consoleSetting}`);
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
    databasePoolMode,
    notifyDatabaseUrl,
    dbPoolMax,
    dataDir: env.BATON_DATA_DIR ?? './.baton/data',
    bootstrap: bootstrap === 'on',
    bootstrapPlan,
    clock,
    clockStartMs,
    adminToken: env.BATON_ADMIN_TOKEN || undefined,
    metricsToken: env.BATON_METRICS_TOKEN || undefined,
    logLevel: env.LOG_LEVEL ?? 'info',
    logFormat,
    secretKey,
    webhookAllowPrivate: allowPrivate === '1',
    webhookTimeoutMs,
    console: consoleSetting === 'on',
  };
}

const isPlan = (name: string): name is Plan => (plans as readonly string[]).includes(name);
