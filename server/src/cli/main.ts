import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { permissions, plans, type Plan } from '@baton/core';
import { AdminApi } from './admin-api';
import { CliFailure, defaultUrl, type CliReply } from './http';
import { tailJournal } from './journal';

/**
 * `baton-server`: starts the server and runs an operator's first hour from the shell (see
 * docs/design/0003-operator-api.md, docs/design/0022-one-team-defaults.md). Replies print as JSON on stdout. Exit codes: 0 success, 1 an error reply or the
 * server out of reach, 2 a usage mistake or a missing setting.
 */
export interface CliIo {
  out: (s: string) => void;
  err: (s: string) => void;
  /** Ends a `journal tail --follow` (the bin leaves it to Ctrl-C). */
  signal?: AbortSignal;
}

const exitCodes = { ok: 0, failed: 1, usage: 2 } as const;

const environmentHelp = `
Environment:
  BATON_URL          the server (default ${defaultUrl})
  BATON_ADMIN_TOKEN  the operator token the server was started with (orgs, spaces, keys, clock)
  BATON_SPACE, BATON_KEY  a space and a key of it (journal tail)

Start here: \`baton-server start\` prints everything a first worker needs; docs/operator.md has the rest.`;

const planList = plans.join(', ');

function parsePlan(value: string): Plan {
  const plan = value.toUpperCase();
  if (!(plans as readonly string[]).includes(plan)) throw new InvalidArgumentError(`one of ${planList}`);
  return plan as Plan;
}

function parseJson(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    throw new InvalidArgumentError('must be JSON, e.g. \'{"requestsPerMinute": null}\'');
  }
}

function parseList(value: string): string[] {
  return value.split(',').map((x) => x.trim()).filter(Boolean);
}

function parseMs(value: string): number {
  const ms = Number(value);
  if (!Number.isInteger(ms) || ms < 0) throw new InvalidArgumentError('a whole number of milliseconds');
  return ms;
}

/** Runs one command line (without the node and script arguments); answers the exit code. */
export async function run(argv: string[], env: NodeJS.ProcessEnv = process.env, io: Partial<CliIo> | ((s: string) => void) = {}): Promise<number> {
  const { out, err, signal } = toIo(io);
  let code: number = exitCodes.ok;
  /** Prints a reply: its JSON on stdout, exit 1 when it is an error reply. */
  const show = (reply: CliReply): void => {
    out(`${typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body, null, 2)}\n`);
    code = reply.ok ? exitCodes.ok : exitCodes.failed;
  };
  const admin = (work: (api: AdminApi) => Promise<CliReply>) => async (): Promise<void> => show(await work(new AdminApi(env)));

  const program = new Command('baton-server')
    .description('Baton, a coordination service for teams of AI agents: start the server, manage organizations, spaces and keys, read the journal.')
    .exitOverride()
    .configureOutput({ writeOut: out, writeErr: err })
    .showHelpAfterError('(add --help for usage)')
    .addHelpText('after', environmentHelp);

  program
    .command('start')
    .description('Start the server (the same as `npm start`, and what `baton-server` alone does); the first start on an empty store creates organization "dev" and prints its URL, space, key and a scope')
    .option('--host <host>', 'where to listen (HOST, default 127.0.0.1)')
    .option('--port <port>', 'where to listen (PORT, default 8080)')
    .option('--data-dir <dir>', 'the embedded store\'s directory (BATON_DATA_DIR, default ./.baton/data)')
    .addHelpText('after', '\nEvery other setting is an environment variable: DATABASE_URL, BATON_ADMIN_TOKEN, BATON_BOOTSTRAP, BATON_BOOTSTRAP_PLAN, ... (README.md, "Running it").')
    .action(async (options: { host?: string; port?: string; dataDir?: string }) => {
      // Loaded here, so that help and the operator commands do not load the store drivers.
      const { startServer } = await import('../serve');
      await startServer({ ...env, ...(options.host ? { HOST: options.host } : {}), ...(options.port ? { PORT: options.port } : {}), ...(options.dataDir ? { BATON_DATA_DIR: options.dataDir } : {}) });
    });

  const orgs = program.command('orgs').description('Organizations (operator API, BATON_ADMIN_TOKEN)');
  orgs.command('list').description('List every organization with its plan and the limits in force').action(admin((api) => api.all('/orgs')));
  orgs
    .command('create')
    .description('Create an organization')
    .requiredOption('--name <name>', 'its name')
    .option('--plan <plan>', `its plan: ${planList} (default FREE)`, parsePlan)
    .option('--limits <json>', 'custom limits, ENTERPRISE only; null lifts a cap', parseJson)
    .action((options: { name: string; plan?: Plan; limits?: unknown }) => admin((api) => api.request('POST', '/orgs', options))());
  orgs
    .command('plan')
    .description('Change the plan of an organization, e.g. to lift the caps of FREE')
    .argument('<orgId>', 'the organization (orgs list shows it)')
    .requiredOption('--plan <plan>', `the new plan: ${planList}`, parsePlan)
    .option('--limits <json>', 'custom limits, ENTERPRISE only; null lifts a cap', parseJson)
    .action((orgId: string, options: { plan: Plan; limits?: unknown }) => admin((api) => api.request('PUT', `/orgs/${encodeURIComponent(orgId)}/plan`, options))());

  const spaces = program.command('spaces').description('Spaces of an organization (operator API, BATON_ADMIN_TOKEN)');
  spaces.command('list').description('List the spaces of an organization').argument('<orgId>', 'the organization').action((orgId: string) => admin((api) => api.all(`/orgs/${encodeURIComponent(orgId)}/spaces`))());
  spaces
    .command('create')
    .description('Create a space in an organization')
    .argument('<orgId>', 'the organization')
    .requiredOption('--name <name>', 'its name')
    .action((orgId: string, options: { name: string }) => admin((api) => api.request('POST', `/orgs/${encodeURIComponent(orgId)}/spaces`, options))());

  const keys = program.command('keys').description('API keys of an organization (operator API, BATON_ADMIN_TOKEN)');
  keys
    .command('list')
    .description('List the keys of an organization, revoked ones too, without secrets')
    .argument('<orgId>', 'the organization')
    .option('--space <spaceId>', 'only the keys that may use this space')
    .action((orgId: string, options: { space?: string }) => admin((api) => api.all(`/orgs/${encodeURIComponent(orgId)}/keys`, { spaceId: options.space }))());
  keys
    .command('create')
    .description('Create a key; its secret is printed only in this reply')
    .argument('<orgId>', 'the organization')
    .option('--name <name>', 'its name (default "key")')
    .option('--permissions <list>', `comma list of ${permissions.join(', ')} (default all four)`, parseList)
    .option('--spaces <list>', 'comma list of space ids it may use (default every space of the organization)', parseList)
    .action((orgId: string, options: { name?: string; permissions?: string[]; spaces?: string[] }) =>
      admin((api) => api.request('POST', `/orgs/${encodeURIComponent(orgId)}/keys`, { name: options.name, permissions: options.permissions, spaceIds: options.spaces }))());
  keys.command('revoke').description('Revoke a key: it is refused from the next request on').argument('<keyId>', 'the key').action((keyId: string) => admin((api) => api.request('POST', `/keys/${encodeURIComponent(keyId)}/revoke`))());

  const journal = program.command('journal').description('The space journal (BATON_SPACE, BATON_KEY)');
  journal
    .command('tail')
    .description('Print the journal\'s events, one JSON line each, from the start or --cursor; with --follow, wait for new ones until Ctrl-C')
    .option('--cursor <cursor>', 'start after this position (a nextCursor or eventId)')
    .option('--types <list>', 'only these event types, e.g. task.*,message.acked')
    .option('--scope <scopeId>', 'only events of this run and the group gates below it')
    .option('-f, --follow', 'keep waiting for new events')
    .action(async (options: { cursor?: string; types?: string; scope?: string; follow?: boolean }) => {
      code = await tailJournal(env, options, out, err, signal);
    });

  const clock = program.command('clock').description('The server clock (operator API, BATON_ADMIN_TOKEN)');
  clock.command('show', { isDefault: true }).description('Show the clock\'s time and mode').action(admin((api) => api.request('GET', '/clock')));
  clock
    .command('advance')
    .description('Move a manual clock (BATON_CLOCK=manual) forward, running the work that falls due')
    .argument('<ms>', 'milliseconds', parseMs)
    .action((ms: number) => admin((api) => api.request('POST', '/clock/advance', { ms }))());

  try {
    // Nothing at all starts the server (`npx baton-server`); `baton admin orgs ...` was the
    // command before and still works. A default command in commander would take a mistyped
    // command as its argument, so neither is one.
    const words = argv.length === 0 ? ['start'] : argv[0] === 'admin' ? argv.slice(1) : argv;
    await program.parseAsync(words, { from: 'user' });
    return code;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? exitCodes.ok : exitCodes.usage;
    if (error instanceof CliFailure) {
      if (error.reply) show(error.reply);
      err(`baton-server: ${error.message}\n`);
      return error.reply ? exitCodes.failed : error.exitCode;
    }
    throw error;
  }
}

function toIo(io: Partial<CliIo> | ((s: string) => void)): CliIo {
  const stdout = (s: string): void => void process.stdout.write(s);
  const stderr = (s: string): void => void process.stderr.write(s);
  if (typeof io === 'function') return { out: io, err: stderr };
  return { out: io.out ?? stdout, err: io.err ?? stderr, ...(io.signal ? { signal: io.signal } : {}) };
}
