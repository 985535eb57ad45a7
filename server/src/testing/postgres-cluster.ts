import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * A PostgreSQL cluster of a run's own (the torture run, the cost benchmarks), in a temporary
 * directory on its own port, so the run can restart it (fast and immediate shutdown), cut its
 * connections, or load extensions such as pg_stat_statements without touching the machine's
 * PostgreSQL or other tests that share it. PostgreSQL refuses to run as root: as root, every
 * pg_ctl runs as the `postgres` user.
 */
export class PostgresCluster {
  private constructor(
    private readonly bin: string,
    private readonly dir: string,
    readonly port: number,
    private readonly settings: Readonly<Record<string, string>>,
  ) {}

  /** The server's log file: auto_explain and slow statements land here. */
  get logPath(): string {
    return join(this.dir, 'log');
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  urlWithPassword(password: string): string {
    return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${this.port}/postgres`;
  }

  /**
   * `settings` are server parameters given at every start (`-c name=value`), e.g.
   * `{ shared_preload_libraries: 'pg_stat_statements' }`.
   */
  static async create(port: number, settings: Readonly<Record<string, string>> = {}): Promise<PostgresCluster> {
    const bin = postgresBin();
    const dir = mkdtempSync(join(tmpdir(), 'baton-pg-'));
    if (process.getuid?.() === 0) chownSync(dir, pgUid(), pgGid());
    const cluster = new PostgresCluster(bin, dir, port, settings);
    cluster.run('initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    await cluster.start();
    return cluster;
  }

  async start(): Promise<void> {
    const extra = Object.entries(this.settings).map(([name, value]) => ` -c ${name}=${value}`).join('');
    const options = `-p ${this.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${this.dir} -c max_connections=200${extra}`;
    this.run('pg_ctl', ['-D', join(this.dir, 'data'), '-o', options, '-l', join(this.dir, 'log'), '-w', '-t', '60', 'start']);
  }

  /** `fast` ends sessions and checkpoints; `immediate` is a crash: recovery replays the WAL on start. */
  async restart(mode: 'fast' | 'immediate'): Promise<void> {
    await this.stop(mode);
    await this.start();
  }

  /** Returns once the server is down: from then on a connection is refused. */
  async stop(mode: 'fast' | 'immediate'): Promise<void> {
    this.run('pg_ctl', ['-D', join(this.dir, 'data'), '-m', mode, '-w', '-t', '60', 'stop']);
  }

  /** Terminates every backend of Baton's connections: what a network cut or a failover does to them. */
  async cutConnections(): Promise<number> {
    const client = new pg.Client({ connectionString: this.url });
    await client.connect();
    try {
      const result = await client.query("SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()");
      return Number(result.rows[0].n);
    } finally {
      await client.end();
    }
  }

  async destroy(): Promise<void> {
    try {
      this.run('pg_ctl', ['-D', join(this.dir, 'data'), '-m', 'immediate', '-w', 'stop']);
    } catch {
      // Already down: the directory goes anyway.
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private run(program: string, args: string[]): void {
    const path = join(this.bin, program);
    const [command, argv] = process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, args];
    execFileSync(command, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  }
}

/** The newest PostgreSQL's binaries (Debian layout), or PG_BIN. */
function postgresBin(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  const found = versions.map((v) => join(root, v, 'bin')).find((bin) => existsSync(join(bin, 'initdb')));
  if (!found) throw new Error('PostgreSQL binaries not found (set PG_BIN to the directory holding initdb and pg_ctl)');
  return found;
}

const pgUid = (): number => Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
const pgGid = (): number => Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
