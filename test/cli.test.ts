import { MemoryStore, SystemClock } from '@baton/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '@baton-coordination/server/cli/main';
import { createBaton, type Baton } from '@baton-coordination/server/host/baton';

/** Every command of `baton-server`, as its path of words. */
const commands = [
  [], ['start'], ['orgs'], ['orgs', 'list'], ['orgs', 'create'], ['orgs', 'plan'], ['spaces'], ['spaces', 'list'], ['spaces', 'create'],
  ['keys'], ['keys', 'list'], ['keys', 'create'], ['keys', 'revoke'], ['journal'], ['journal', 'tail'], ['clock'], ['clock', 'show'], ['clock', 'advance'],
];

interface Ran {
  code: number;
  out: string;
  err: string;
  json: any;
}

describe('baton-server CLI', () => {
  let baton: Baton;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    baton = await createBaton({ store: new MemoryStore(), clock: new SystemClock(), adminToken: 'cli-token', bootstrap: true });
    const address = await baton.app.listen({ host: '127.0.0.1', port: 0 });
    env = { BATON_URL: address, BATON_ADMIN_TOKEN: 'cli-token', BATON_SPACE: baton.devCredentials!.spaceId, BATON_KEY: baton.devCredentials!.secret };
  });
  afterAll(async () => baton.drainAndClose());

  const cliWith = async (environment: NodeJS.ProcessEnv, argv: string[], signal?: AbortSignal): Promise<Ran> => {
    let out = '';
    let err = '';
    const code = await run(argv, environment, { out: (s) => (out += s), err: (s) => (err += s), ...(signal ? { signal } : {}) });
    let json: unknown;
    try {
      json = JSON.parse(out);
    } catch {
      json = undefined;
    }
    return { code, out, err, json };
  };
  const cli = (...argv: string[]): Promise<Ran> => cliWith(env, argv);

  it.each(commands.map((path) => [path.join(' ') || '(none)', path]))('answers --help on %s with its usage, exit 0', async (_name, path) => {
    const help = await cli(...(path as string[]), '--help');
    expect(help.code).toBe(0);
    expect(help.out).toContain(`Usage: baton-server ${(path as string[]).join(' ')}`.trimEnd());
    expect(help.err).toBe('');
  });

  it('lists every command group in the top-level help, and every command in its group\'s help', async () => {
    const top = (await cli('--help')).out;
    for (const group of ['start', 'orgs', 'spaces', 'keys', 'journal', 'clock']) expect(top).toMatch(new RegExp(`^  ${group}\\b`, 'm'));
    for (const [group, verb] of commands.filter((path) => path.length === 2)) expect((await cli(group!, '--help')).out).toMatch(new RegExp(`^  ${verb}\\b`, 'm'));
  });

  it('lists organizations, spaces and keys, finding the bootstrap organization without knowing its id', async () => {
    const orgs = await cli('orgs', 'list');
    expect(orgs.code).toBe(0);
    const dev = orgs.json.find((o: any) => o.name === 'dev');
    expect(dev).toMatchObject({ id: baton.devCredentials!.orgId, plan: 'ENTERPRISE', limits: { requestsPerMinute: null } });
    const spaces = await cli('spaces', 'list', dev.id);
    expect(spaces.json.map((s: any) => s.id)).toEqual([baton.devCredentials!.spaceId]);
    const keys = await cli('keys', 'list', dev.id, '--space', baton.devCredentials!.spaceId);
    expect(keys.json.map((k: any) => k.id)).toEqual([baton.devCredentials!.keyId]);
    expect(keys.out).not.toContain(baton.devCredentials!.secret);
  });

  it('follows every page of a list longer than one page', async () => {
    const org = await cli('orgs', 'create', '--name', 'many-spaces', '--plan', 'TEAM');
    for (let i = 0; i < 3; i++) await cli('spaces', 'create', org.json.id, '--name', `s${i}`);
    const spaces = await cli('spaces', 'list', org.json.id);
    expect(spaces.json.map((s: any) => s.name).sort()).toEqual(['s0', 's1', 's2']);
  });

  it('creates an org, a space and a limited key, then revokes it', async () => {
    const org = await cli('orgs', 'create', '--name', 'acme', '--plan', 'team');
    expect(org).toMatchObject({ code: 0, json: { name: 'acme', plan: 'TEAM' } });
    const space = await cli('spaces', 'create', org.json.id, '--name', 'prod');
    expect(space.json).toMatchObject({ orgId: org.json.id, name: 'prod' });
    const key = await cli('keys', 'create', org.json.id, '--permissions', 'coordination_read', '--spaces', space.json.id);
    expect(key.json).toMatchObject({ permissions: ['coordination_read'], spaceIds: [space.json.id] });
    expect(key.json.secret).toMatch(/^bk_/);
    const revoked = await cli('keys', 'revoke', key.json.id);
    expect(revoked.json.revokedAt).not.toBeNull();
  });

  it('sets a plan, with custom limits on ENTERPRISE', async () => {
    const org = await cli('orgs', 'create', '--name', 'big');
    expect(org.json.plan).toBe('FREE');
    const plan = await cli('orgs', 'plan', org.json.id, '--plan', 'ENTERPRISE', '--limits', '{"apiKeys": 2000, "requestsPerMinute": null}');
    expect(plan.json).toMatchObject({ plan: 'ENTERPRISE', limits: { apiKeys: 2000, requestsPerMinute: null } });
  });

  it('still takes the commands under `admin`, as before', async () => {
    const org = await cli('admin', 'orgs', 'create', '--name', 'old-style');
    expect(org.code).toBe(0);
    expect((await cli('admin', 'clock')).json.mode).toBe('system');
  });

  it('reads the clock, and exits 1 with the error reply when advancing a system clock', async () => {
    expect((await cli('clock')).json.mode).toBe('system');
    const advance = await cli('clock', 'advance', '1000');
    expect(advance.code).toBe(1);
    expect(advance.json.error.code).toBe('CONFLICT');
  });

  it('exits 1 with the error reply for an unknown organization, and 1 with a message when the server is out of reach', async () => {
    const missing = await cli('spaces', 'list', '00000000-0000-4000-8000-000000000001');
    expect(missing.code).toBe(1);
    expect(missing.json.error.code).toBe('NOT_FOUND');
    const unreachable = await cliWith({ ...env, BATON_URL: 'http://127.0.0.1:1' }, ['orgs', 'list']);
    expect(unreachable.code).toBe(1);
    expect(unreachable.err).toContain('cannot reach http://127.0.0.1:1');
  });

  it.each([
    [['nonsense'], /unknown command 'nonsense'/],
    [['orgs', 'create'], /required option '--name <name>' not specified/],
    [['orgs', 'create', '--name', 'x', '--plan', 'GOLD'], /one of FREE, BUILDER, TEAM, SCALE, ENTERPRISE, LEGACY/],
    [['orgs', 'plan', 'some-id', '--plan', 'ENTERPRISE', '--limits', '{nope'], /must be JSON/],
    [['clock', 'advance', 'soon'], /a whole number of milliseconds/],
    [['keys', 'revoke'], /missing required argument 'keyId'/],
    [['orgs', 'list', '--bogus'], /unknown option '--bogus'/],
  ])('exits 2 on the usage mistake %j, saying what is wrong', async (argv, message) => {
    const ran = await cli(...argv);
    expect(ran.code).toBe(2);
    expect(ran.err).toMatch(message);
    expect(ran.err).toContain('(add --help for usage)');
  });

  it('exits 2 without the setting a command needs', async () => {
    const noToken = await cliWith({ BATON_URL: env.BATON_URL }, ['orgs', 'list']);
    expect(noToken.code).toBe(2);
    expect(noToken.err).toContain('set BATON_ADMIN_TOKEN');
    const noKey = await cliWith({ BATON_URL: env.BATON_URL }, ['journal', 'tail']);
    expect(noKey.code).toBe(2);
    expect(noKey.err).toContain('set BATON_SPACE and BATON_KEY');
  });

  it('tails the journal from the start, one JSON line per event, and says where to continue', async () => {
    const created = await fetch(`${env.BATON_URL}/v1/spaces/${env.BATON_SPACE}/budgets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.BATON_KEY}`, 'content-type': 'application/json', 'idempotency-key': 'cli-tail-budget' },
      body: JSON.stringify({ name: 'tailed', currency: 'USD', scale: 2, limitMinor: '100' }),
    });
    expect(created.status).toBe(201);
    const tail = await cli('journal', 'tail', '--types', 'budget.*');
    expect(tail.code).toBe(0);
    const events = tail.out.trim().split('\n').map((line) => JSON.parse(line));
    expect(events.map((e) => e.type)).toContain('budget.created');
    const cursor = /continue with --cursor (\d+)/.exec(tail.err)?.[1];
    expect(cursor).toBeDefined();
    expect((await cli('journal', 'tail', '--cursor', cursor!)).out).toBe('');
  });

  it('with --follow, prints an event committed while it waits, until stopped', async () => {
    const start = await cli('journal', 'tail');
    const cursor = /continue with --cursor (\d+)/.exec(start.err)![1]!;
    const stop = new AbortController();
    let out = '';
    const following = run(['journal', 'tail', '--follow', '--cursor', cursor], env, { out: (s) => (out += s), err: () => undefined, signal: stop.signal });
    await new Promise((r) => setTimeout(r, 100)); // the watch is parked
    await fetch(`${env.BATON_URL}/v1/spaces/${env.BATON_SPACE}/budgets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.BATON_KEY}`, 'content-type': 'application/json', 'idempotency-key': 'cli-follow-budget' },
      body: JSON.stringify({ name: 'followed', currency: 'USD', scale: 2, limitMinor: '100' }),
    });
    await expect.poll(() => out, { timeout: 10_000 }).toContain('"budget.created"');
    stop.abort();
    expect(await following).toBe(0);
  });
});
