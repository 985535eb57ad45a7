import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A PgBouncer process of a run's own (test/pooler.pg.test.ts, the peers bench's pooler modes;
 * Debian's `pgbouncer` package, which .ci/run installs), in a temporary directory on a free port,
 * in front of one database: `session` and `transaction`
 * are two names of that database on it, pooled in the mode they say, with PgBouncer's defaults
 * otherwise (no ignore_startup_parameters, no max_prepared_statements): what a deployment gets.
 * Not the Debian service: its port 6432 and configuration stay untouched.
 */
export class PgBouncer {
  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    readonly port: number,
    readonly version: string,
    private readonly user: string,
    private readonly password: string,
    private readonly output: () => string,
  ) {}

  /** A URL of the database through PgBouncer, pooled per `mode`. */
  url(mode: 'session' | 'transaction'): string {
    const auth = this.password ? `${encodeURIComponent(this.user)}:${encodeURIComponent(this.password)}` : encodeURIComponent(this.user);
    return `postgres://${auth}@127.0.0.1:${this.port}/${mode}`;
  }

  /** The PgBouncer process: the bench reads its CPU. */
  get pid(): number {
    return this.child.pid!;
  }

  /** PgBouncer's log so far, for a failure's message. */
  log(): string {
    return this.output();
  }

  /**
   * Starts PgBouncer in front of the database of `databaseUrl`. A missing binary is an error,
   * not a reason to skip: the pooler tests are what says Baton runs behind one.
   */
  static async start(databaseUrl: string): Promise<PgBouncer> {
    const bin = pgbouncerBin();
    const version = /PgBouncer (\S+)/.exec(spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout)?.[1] ?? 'unknown';
    const target = new URL(databaseUrl);
    const user = decodeURIComponent(target.username || 'postgres');
    const password = decodeURIComponent(target.password);
    const database = decodeURIComponent(target.pathname.slice(1));
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'baton-pgbouncer-'));
    const server = `host=${target.hostname} port=${target.port || '5432'} dbname=${database} user=${user}${password ? ` password=${password}` : ''}`;
    writeFileSync(
      join(dir, 'pgbouncer.ini'),
      [
        '[databases]',
        // Session mode holds a PostgreSQL connection per client connection: room for two servers' pools.
        `session = ${server} pool_mode=session pool_size=40`,
        `transaction = ${server} pool_mode=transaction pool_size=10`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${join(dir, 'users.txt')}`,
        'max_client_conn = 500',
        '',
      ].join('\n'),
    );
    writeFileSync(join(dir, 'users.txt'), `"${user}" ""\n`);
    // PgBouncer refuses to run as root; as root it runs as the `postgres` user (-u).
    const asRoot = process.getuid?.() === 0;
    if (asRoot) {
      const ids = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim();
      const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim();
      chownSync(dir, Number(ids), Number(gid));
    }
    const child = spawn(bin, [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const bouncer = new PgBouncer(child, dir, port, version, user, password, () => output);
    try {
      await untilListening(port, child, () => output);
    } catch (error) {
      await bouncer.stop();
      throw error;
    }
    return bouncer;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      this.child.kill('SIGINT'); // PgBouncer's immediate shutdown
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function pgbouncerBin(): string {
  for (const candidate of ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer']) if (existsSync(candidate)) return candidate;
  const found = spawnSync('sh', ['-c', 'command -v pgbouncer'], { encoding: 'utf8' }).stdout.trim();
  if (found) return found;
  throw new Error('pgbouncer is not installed: the pooler tests need it (apt-get install -y pgbouncer; .ci/run installs it when missing)');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function untilListening(port: number, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited ${child.exitCode}:\n${output()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`pgbouncer did not listen on ${port} within 10 s:\n${output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
