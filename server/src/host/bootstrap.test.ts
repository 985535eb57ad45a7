import { MemoryStore, SeededRandom } from '@baton/core';
import { describe, expect, it } from 'vitest';
import { bootstrapDev } from './bootstrap';
import { keyIdOf, secretMatches } from './secrets';

describe('dev bootstrap', () => {
  it('creates org dev (FREE), space default and an all-permission key on an empty store, once', async () => {
    const store = new MemoryStore();
    const dev = await bootstrapDev(store, 0, new SeededRandom(7));
    expect(dev).toBeDefined();
    const key = await store.read((tx) => tx.apiKeys.get(dev!.keyId));
    expect(key).toMatchObject({ permissions: ['coordination_read', 'coordination_write', 'resource_config', 'usage_read'], spaceIds: null });
    expect(keyIdOf(dev!.secret)).toBe(dev!.keyId);
    expect(secretMatches(dev!.secret, key!.secretHash)).toBe(true);
    expect(await store.read((tx) => tx.orgs.get(dev!.orgId))).toMatchObject({ name: 'dev', plan: 'FREE' });
    expect(await store.read((tx) => tx.spaces.get(dev!.spaceId))).toMatchObject({ name: 'default' });

    expect(await bootstrapDev(store, 0, new SeededRandom(8))).toBeUndefined();
    expect(await store.read((tx) => tx.orgs.count())).toBe(1);
  });
});
