import { effectiveLimits, MemoryStore, SeededRandom, spaceLimits } from '@baton/core';
import { describe, expect, it } from 'vitest';
import { bootstrapDev, firstTenant } from './bootstrap';
import { keyIdOf, secretMatches } from './secrets';

describe('dev bootstrap', () => {
  it('creates org dev, space default and an all-permission key on an empty store, once', async () => {
    const store = new MemoryStore();
    const dev = await bootstrapDev(store, 0, new SeededRandom(7));
    expect(dev).toBeDefined();
    const key = await store.read((tx) => tx.apiKeys.get(dev!.keyId));
    expect(key).toMatchObject({ permissions: ['coordination_read', 'coordination_write', 'resource_config', 'usage_read'], spaceIds: null });
    expect(keyIdOf(dev!.secret)).toBe(dev!.keyId);
    expect(secretMatches(dev!.secret, key!.secretHash)).toBe(true);
    expect(await store.read((tx) => tx.orgs.get(dev!.orgId))).toMatchObject({ name: 'dev' });
    expect(await store.read((tx) => tx.spaces.get(dev!.spaceId))).toMatchObject({ name: 'default' });

    expect(await bootstrapDev(store, 0, new SeededRandom(8))).toBeUndefined();
    expect(await store.read((tx) => tx.orgs.count())).toBe(1);
  });

  it('puts the organization on ENTERPRISE with no caps on operations, rate, agents, active runs or active tasks (docs/design/0022-one-team-defaults.md)', async () => {
    const store = new MemoryStore();
    const dev = await bootstrapDev(store, 0, new SeededRandom(7));
    const org = await store.read((tx) => tx.orgs.get(dev!.orgId));
    expect(org!.plan).toBe('ENTERPRISE');
    expect(effectiveLimits(org!)).toMatchObject({ operationsPerMonth: null, requestsPerMinute: null, agentsAtOnce: null, activeRuns: null, activeTasks: null, spaces: null, apiKeys: null });
    const space = await store.read((tx) => tx.spaces.get(dev!.spaceId));
    expect(spaceLimits(space!, org!)).toMatchObject({ requestsPerMinute: null, maxBacklog: 100_000 });
  });

  it('takes the plan it is given: FREE is the hosted default, with its caps', async () => {
    const store = new MemoryStore();
    const dev = await bootstrapDev(store, 0, new SeededRandom(7), 'FREE');
    const org = await store.read((tx) => tx.orgs.get(dev!.orgId));
    expect(org).toMatchObject({ plan: 'FREE', limits: null });
    expect(effectiveLimits(org!)).toMatchObject({ requestsPerMinute: 600, activeTasks: 1_000 });
    expect(await store.read((tx) => tx.spaces.get(dev!.spaceId))).toMatchObject({ limits: null });
  });

  it('finds the bootstrapped organization and its space on a later start', async () => {
    const store = new MemoryStore();
    expect(await firstTenant(store)).toBeUndefined();
    const dev = await bootstrapDev(store, 0, new SeededRandom(7));
    await store.transaction(async (tx) => {
      await tx.orgs.insert({ id: '00000000-0000-4000-8000-000000000009', name: 'later', plan: 'TEAM', limits: null, createdAt: 5, updatedAt: 5 });
    });
    const found = await firstTenant(store);
    expect(found?.org.id).toBe(dev!.orgId);
    expect(found?.space?.id).toBe(dev!.spaceId);
  });
});
