import pg from 'pg';
import type { PoolMode } from './pg-driver';

/**
 * The start-up check of what stands between Baton and PostgreSQL (issue 33): a setting that
 * would fail later (prepared statements through a transaction pooler answer every request with
 * 500; a LISTEN through one hears nothing) is refused before the server listens, with a message
 * naming the fix.
 */

/** What two connections to one URL say about its sessions. */
export interface SessionProbe {
  /**
   * `own`: each connection kept one PostgreSQL backend, and the two had different ones
   * (PostgreSQL directly, or a session-mode pool). `shared`: one backend served both, or a
   * connection's backend changed: a transaction (or statement) pooler. `unknown`: the probe
   * could not tell (`detail` says why).
   */
  sessions: 'own' | 'shared' | 'unknown';
  detail: string;
  /** current_database() and pg_postmaster_start_time() of the backend: which database, on which server run. */
  database?: string;
  serverStartedAt?: string;
}

const probeRounds = 3;

/**
 * Asks `pg_backend_pid()` of two connections in turn, three rounds. A session-mode pool gives
 * each of them a backend of its own for as long as it is connected, so each keeps its pid and
 * the two differ. A transaction pooler hands a backend back after every statement outside a
 * transaction, and PgBouncer hands out the backend released last first (server_round_robin off,
 * its default): the second connection then gets the first one's. Under other servers' traffic it
 * may get another, but then a connection's own pid changes from round to round. Costs two
 * connections and six statements, once at start.
 */
export async function probeSessions(url: string, timeoutMs = 5_000): Promise<SessionProbe> {
  const clients = [0, 1].map(() => new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs, application_name: 'baton-pooler-check' }));
  // An error of an idle probe connection must not crash the process: the probe's own calls see it.
  for (const client of clients) client.on('error', () => undefined);
  try {
    await Promise.all(clients.map((client) => client.connect()));
    const pids: number[][] = [[], []];
    let database: string | undefined;
    let serverStartedAt: string | undefined;
    for (let round = 0; round < probeRounds; round++) {
      for (const [i, client] of clients.entries()) {
        const { rows } = await client.query<{ pid: number; database: string; started: string }>('SELECT pg_backend_pid() AS pid, current_database() AS database, pg_postmaster_start_time()::text AS started');
        pids[i]!.push(rows[0]!.pid);
        database ??= rows[0]!.database;
        serverStartedAt ??= rows[0]!.started;
      }
    }
    const [first, second] = pids as [number[], number[]];
    const steady = (list: number[]): boolean => list.every((pid) => pid === list[0]);
    const own = steady(first) && steady(second) && first[0] !== second[0];
    const detail = `backend pids of two connections over ${probeRounds} rounds: [${first.join(', ')}] and [${second.join(', ')}]`;
    return { sessions: own ? 'own' : 'shared', detail, database, serverStartedAt };
  } catch (error) {
    return { sessions: 'unknown', detail: error instanceof Error ? error.message : String(error) };
  } finally {
    await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
  }
}

export interface PoolerSettings {
  poolMode: PoolMode;
  /** Whether BATON_NOTIFY_DATABASE_URL is set (otherwise the notifier uses DATABASE_URL). */
  notifyUrlSet: boolean;
}

export interface PoolerVerdict {
  /** Why the server must not start, naming the setting that fixes it. */
  refusal: string | undefined;
  warnings: string[];
}

const guide = 'docs/deploy.md, "Connection poolers"';

/** The decision, apart from the probing so it can be tested alone. `notify` is the probe of the notifier's URL when it is not DATABASE_URL. */
export function poolerVerdict(settings: PoolerSettings, store: SessionProbe, notify: SessionProbe | undefined): PoolerVerdict {
  const warnings: string[] = [];
  if (store.sessions === 'shared' && settings.poolMode === 'session') {
    return {
      refusal:
        'DATABASE_URL goes through a transaction pooler (two connections shared PostgreSQL backends), where prepared statements fail: ' +
        'set BATON_DATABASE_POOL_MODE=transaction, and BATON_NOTIFY_DATABASE_URL to the same database reached directly or through a session-mode pool, ' +
        `or point DATABASE_URL at a session-mode pool (${guide}; ${store.detail})`,
      warnings,
    };
  }
  const listen = notify ?? store;
  if (listen.sessions === 'shared') {
    return {
      refusal:
        `${settings.notifyUrlSet ? 'BATON_NOTIFY_DATABASE_URL' : 'DATABASE_URL'} goes through a transaction pooler, where LISTEN hears nothing once its transaction ends: ` +
        `set BATON_NOTIFY_DATABASE_URL to the same database reached directly or through a session-mode pool (${guide}; ${listen.detail})`,
      warnings,
    };
  }
  if (notify && store.database !== undefined && notify.database !== undefined && (store.database !== notify.database || store.serverStartedAt !== notify.serverStartedAt)) {
    return {
      refusal:
        `BATON_NOTIFY_DATABASE_URL reaches database ${notify.database} (server up since ${notify.serverStartedAt}) but DATABASE_URL reaches ${store.database} (server up since ${store.serverStartedAt}): ` +
        `notifications reach only listeners of the same database, so both must name one database (${guide})`,
      warnings,
    };
  }
  if (store.sessions === 'own' && settings.poolMode === 'transaction') {
    warnings.push(`BATON_DATABASE_POOL_MODE=transaction, but DATABASE_URL keeps its sessions: statements are parsed and planned on every use; session (the default) prepares them (${guide})`);
  }
  for (const [name, probe] of [['DATABASE_URL', store], ['BATON_NOTIFY_DATABASE_URL', notify]] as const) {
    if (probe?.sessions === 'unknown') warnings.push(`could not tell whether ${name} keeps its sessions: ${probe.detail}`);
  }
  return { refusal: undefined, warnings };
}

/** Probes DATABASE_URL (and the notifier's URL when it has its own) and decides. */
export async function checkPooler(databaseUrl: string, notifyUrl: string | undefined, poolMode: PoolMode): Promise<PoolerVerdict> {
  // One after the other: two probes through one transaction pool would shuffle each other's backends.
  const store = await probeSessions(databaseUrl);
  const notify = notifyUrl === undefined ? undefined : await probeSessions(notifyUrl);
  return poolerVerdict({ poolMode, notifyUrlSet: notifyUrl !== undefined }, store, notify);
}
