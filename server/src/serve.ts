import type { Store } from '@baton/core';
import type { Logger } from 'pino';
import { ConfigError, loadConfig, type Config } from './config';
import { randomUUID } from 'node:crypto';
import { startBanner } from './host/banner';
import { clockFor, createBaton } from './host/baton';
import { firstTenant } from './host/bootstrap';
import { dataDirSecretKey, SecretKeyFileError } from './host/data-dir-secret-key';
import { createLogger, resolveLogFormat } from './host/logger';
import { DataDirInUseError } from './store/data-dir-lock';
import { embeddedDurabilityNote } from './store/durability';
import { PgNotifier } from './notify/pg-notifier';
import { openStore } from './store/open-store';
import { checkPooler } from './store/sql/pooler-check';

/** Exit codes of a refused start (docs/operator.md); 1 is any other failure to start. */
const exitCodes = { config: 2, dataDirInUse: 3 } as const;

/**
 * What a test may put between the server and what it opened: `store` wraps the store the
 * server works on (the torture run plants a known bug there, torture/bugs.ts). Nothing by default.
 */
export interface ServerSeams {
  store?: (opened: Store) => Store;
}

/**
 * `npm start` and `baton-server start`: the Baton server on PostgreSQL (DATABASE_URL) or embedded
 * PGlite, serving until SIGTERM or SIGINT drains it. A refused start exits the process.
 */
export async function startServer(env: NodeJS.ProcessEnv, seams: ServerSeams = {}): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`baton: ${error.message}\n`);
    process.exit(exitCodes.config);
  }
  const logger = createLogger({ level: config.logLevel, format: resolveLogFormat(config.logFormat, process.stdout.isTTY === true) });
  if (config.databaseUrl) {
    // A pooler setting that would fail on every request, or leave LISTEN deaf, is refused now.
    const verdict = await checkPooler(config.databaseUrl, config.notifyDatabaseUrl, config.databasePoolMode);
    for (const warning of verdict.warnings) logger.warn(warning);
    if (verdict.refusal) {
      process.stderr.write(`baton: ${verdict.refusal}\n`);
      process.exit(exitCodes.config);
    }
  }
  const store = await openStore(
    config.databaseUrl ? { kind: 'postgres', url: config.databaseUrl, poolMax: config.dbPoolMax, poolMode: config.databasePoolMode } : { kind: 'pglite', dataDir: config.dataDir },
  ).catch(
    (error: unknown) => {
      if (!(error instanceof DataDirInUseError)) throw error;
      process.stderr.write(`baton: ${error.message}\n`);
      process.exit(exitCodes.dataDirInUse);
    },
  );
  if (store.kind === 'pglite') logger.warn({ dataDir: config.dataDir }, embeddedDurabilityNote);
  const secretKey = store.kind === 'pglite' && !config.secretKey ? keptSecretKey(config.dataDir, logger) : config.secretKey;
  const clock = clockFor(config);
  // Several servers may share PostgreSQL: their long polls wake through LISTEN/NOTIFY. PGlite
  // is one process, so its default LocalNotifier is enough.
  // It takes two connections of its own: the listener and a publisher with asynchronous commit.
  // It may have a URL of its own (BATON_NOTIFY_DATABASE_URL), for a store behind a transaction pooler.
  const notifier = store.kind === 'postgres' && config.databaseUrl ? await PgNotifier.start({ url: config.notifyDatabaseUrl ?? config.databaseUrl, clock, logger }) : undefined;
  const baton = await createBaton({ store: seams.store ? seams.store(store) : store, clock, adminToken: config.adminToken, metricsToken: config.metricsToken, console: config.console, bootstrap: config.bootstrap, bootstrapPlan: config.bootstrapPlan, logger, notifier,
    webhooks: { secretKey, allowPrivate: config.webhookAllowPrivate, timeoutMs: config.webhookTimeoutMs } });
  if (!secretKey) logger.warn('BATON_SECRET_KEY is not set: webhook destinations cannot be created (docs/operator.md)');

  const shutdown = (signal: string): void => {
    logger.info({ signal }, 'draining: readiness is false, waiting for in-flight requests');
    baton
      .drainAndClose()
      .then(() => notifier?.close())
      .then(() => store.close())
      .then(
      () => {
        logger.info('drained; exiting');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'drain failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));

  baton.background.start();
  // Webhook delivery on its own timer (tests and the simulator run it through runDueWork).
  baton.webhooks.start();
  baton.limitsSync.start();
  const address = await baton.app.listen({ host: config.host, port: config.port });
  logger.info({ address, store: store.kind, clock: clock.mode, admin: config.adminToken ? 'enabled' : 'disabled (set BATON_ADMIN_TOKEN)', metrics: config.metricsToken ? 'enabled' : 'disabled (set BATON_METRICS_TOKEN)' }, 'baton is serving');
  const existing = config.bootstrap && !baton.devCredentials ? await firstTenant(store) : undefined;
  process.stdout.write(startBanner({ address, created: baton.devCredentials, existing, bootstrap: config.bootstrap, adminEnabled: config.adminToken !== undefined, scopeId: randomUUID(), console: config.console }));
}

/** On the embedded store without BATON_SECRET_KEY: the key kept in the data directory, made on first use (docs/design/0022-one-team-defaults.md). */
function keptSecretKey(dataDir: string, logger: Logger): Buffer {
  try {
    const kept = dataDirSecretKey(dataDir);
    if (kept.created) logger.warn({ path: kept.path }, 'BATON_SECRET_KEY is not set: generated a key to seal webhook secrets and kept it in the data directory (mode 0600); set BATON_SECRET_KEY to choose your own (docs/operator.md)');
    else logger.info({ path: kept.path }, 'BATON_SECRET_KEY is not set: webhook secrets are sealed with the key kept in the data directory');
    return kept.key;
  } catch (error) {
    if (!(error instanceof SecretKeyFileError)) throw error;
    process.stderr.write(`baton: ${error.message}\n`);
    process.exit(exitCodes.config);
  }
}
