import { MemoryStore, SystemClock } from '@baton/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '@baton/server/cli/main';
import { createBaton, type Baton } from '@baton/server/host/baton';

describe('baton admin CLI', () => {
  let baton: Baton;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    baton = await createBaton({ store: new MemoryStore(), clock: new SystemClock(), adminToken: 'cli-token' });
    const address = await baton.app.listen({ host: '127.0.0.1', port: 0 });
    env = { BATON_URL: address, BATON_ADMIN_TOKEN: 'cli-token' };
  });
  afterAll(async () => baton.drainAndClose());

  const cli = async (...argv: string[]): Promise<{ code: number; json: any }> => {
    let printed = '';
    const code = await run(argv, env, (s) => (printed += s));
    return { code, json: printed ? JSON.parse(printed) : undefined };
  };

  it('creates an org, a space and a limited key, then revokes it', async () => {
    const org = await cli('admin', 'orgs', 'create', '--name', 'acme', '--plan', 'TEAM');
    expect(org).toMatchObject({ code: 0, json: { name: 'acme', plan: 'TEAM' } });
    const space = await cli('admin', 'spaces', 'create', org.json.id, '--name', 'prod');
    expect(space.json).toMatchObject({ orgId: org.json.id, name: 'prod' });
    const key = await cli('admin', 'keys', 'create', org.json.id, '--permissions', 'coordination_read', '--spaces', space.json.id);
    expect(key.json).toMatchObject({ permissions: ['coordination_read'], spaceIds: [space.json.id] });
    expect(key.json.secret).toMatch(/^bk_/);
    const revoked = await cli('admin', 'keys', 'revoke', key.json.id);
    expect(revoked.json.revokedAt).not.toBeNull();
  });

  it('changes a plan with custom limits on ENTERPRISE', async () => {
    const org = await cli('admin', 'orgs', 'create', '--name', 'big');
    const plan = await cli('admin', 'orgs', 'plan', org.json.id, '--plan', 'ENTERPRISE', '--limits', '{"apiKeys": 2000}');
    expect(plan.json).toMatchObject({ plan: 'ENTERPRISE', limits: { apiKeys: 2000 } });
  });

  it('reads the clock, and exits 1 with the error reply when advancing a system clock', async () => {
    expect((await cli('admin', 'clock')).json.mode).toBe('system');
    const advance = await cli('admin', 'clock', 'advance', '1000');
    expect(advance.code).toBe(1);
    expect(advance.json.error.code).toBe('CONFLICT');
  });

  it('exits 2 on a usage mistake or without a token', async () => {
    expect((await cli('admin', 'orgs', 'create')).code).toBe(2);
    expect((await cli('admin', 'nonsense')).code).toBe(2);
    expect(await run(['admin', 'clock'], { BATON_URL: env.BATON_URL }, () => undefined)).toBe(2);
  });
});
