import { parseArgs } from 'node:util';

/**
 * `baton admin ...`: the operator API of decisions §2 from the shell. It prints each reply's
 * JSON; the exit code is 0 on 2xx, 1 on an error reply, 2 on a usage mistake.
 */
const usage = `usage: baton admin <command>

  orgs create --name NAME [--plan PLAN] [--limits JSON]
  orgs plan ORG_ID --plan PLAN [--limits JSON]
  spaces create ORG_ID --name NAME
  keys create ORG_ID [--name NAME] [--permissions p1,p2] [--spaces id1,id2]
  keys revoke KEY_ID
  clock
  clock advance MS

Environment: BATON_URL (default http://127.0.0.1:8080), BATON_ADMIN_TOKEN (required).
Plans: FREE, BUILDER, TEAM, SCALE, ENTERPRISE, LEGACY. Permissions: coordination_read,
coordination_write, resource_config, usage_read.`;

interface Request {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  body?: unknown;
}

class UsageError extends Error {}

export async function run(argv: string[], env: NodeJS.ProcessEnv = process.env, out: (s: string) => void = (s) => process.stdout.write(s)): Promise<number> {
  let request: Request;
  try {
    request = toRequest(argv);
  } catch (error) {
    if (!(error instanceof UsageError) && !(error instanceof TypeError)) throw error;
    process.stderr.write(`baton: ${error.message}\n\n${usage}\n`);
    return 2;
  }
  const token = env.BATON_ADMIN_TOKEN;
  if (!token) {
    process.stderr.write('baton: set BATON_ADMIN_TOKEN to the server\'s operator token\n');
    return 2;
  }
  const base = (env.BATON_URL ?? 'http://127.0.0.1:8080').replace(/\/$/, '');
  const response = await fetch(`${base}/admin/v1${request.path}`, {
    method: request.method,
    headers: { authorization: `Bearer ${token}`, ...(request.body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: request.body === undefined ? undefined : JSON.stringify(request.body),
  });
  const text = await response.text();
  out(`${formatJson(text)}\n`);
  return response.ok ? 0 : 1;
}

function formatJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function toRequest(argv: string[]): Request {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      plan: { type: 'string' },
      limits: { type: 'string' },
      permissions: { type: 'string' },
      spaces: { type: 'string' },
    },
  });
  const [area, resource, verb, arg] = positionals;
  if (area !== 'admin') throw new UsageError('the only command is `baton admin`');
  const need = (value: string | undefined, what: string): string => {
    if (!value) throw new UsageError(`missing ${what}`);
    return value;
  };
  const limits = values.limits === undefined ? undefined : parseLimits(values.limits);
  const list = (s: string | undefined): string[] | undefined => (s === undefined ? undefined : s.split(',').map((x) => x.trim()).filter(Boolean));
  switch (`${resource ?? ''} ${verb ?? ''}`.trim()) {
    case 'orgs create':
      return { method: 'POST', path: '/orgs', body: { name: need(values.name, '--name'), plan: values.plan, limits } };
    case 'orgs plan':
      return { method: 'PUT', path: `/orgs/${need(arg, 'ORG_ID')}/plan`, body: { plan: need(values.plan, '--plan'), limits } };
    case 'spaces create':
      return { method: 'POST', path: `/orgs/${need(arg, 'ORG_ID')}/spaces`, body: { name: need(values.name, '--name') } };
    case 'keys create':
      return { method: 'POST', path: `/orgs/${need(arg, 'ORG_ID')}/keys`, body: { name: values.name, permissions: list(values.permissions), spaceIds: list(values.spaces) } };
    case 'keys revoke':
      return { method: 'POST', path: `/keys/${need(arg, 'KEY_ID')}/revoke` };
    case 'clock':
      return { method: 'GET', path: '/clock' };
    case 'clock advance':
      return { method: 'POST', path: '/clock/advance', body: { ms: Number(need(arg, 'MS')) } };
    default:
      throw new UsageError(`unknown command: admin ${positionals.slice(1).join(' ')}`);
  }
}

function parseLimits(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError('--limits must be JSON, e.g. \'{"spaces": 50}\'');
  }
}
