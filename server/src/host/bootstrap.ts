import { tenancy, type Random, type Store } from '@baton/core';
import { issueSecret } from './secrets';

export interface DevCredentials {
  orgId: string;
  spaceId: string;
  keyId: string;
  secret: string;
}

/**
 * decisions §1: on a store with no organization, create organization `dev` (FREE), space
 * `default` and one key with all four permissions. Returns undefined when the store already
 * has an organization.
 */
export async function bootstrapDev(store: Store, nowMs: number, random: Random): Promise<DevCredentials | undefined> {
  const { keyId, secret, secretHash } = issueSecret(random);
  return store.transaction(async (tx) => {
    if ((await tx.orgs.count()) > 0) return undefined;
    const ctx = { tx, nowMs, random };
    const org = await tenancy.createOrg(ctx, { name: 'dev', plan: 'FREE' });
    const space = await tenancy.createSpace(ctx, org.id, 'default');
    await tenancy.createKey(ctx, org.id, { name: 'dev', permissions: ['coordination_read', 'coordination_write', 'resource_config', 'usage_read'] }, keyId, secretHash);
    return { orgId: org.id, spaceId: space.id, keyId, secret };
  });
}
