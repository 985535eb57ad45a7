import { tenancy, type Org, type Plan, type PlanLimits, type Random, type Space, type Store } from '@baton/core';
import { issueSecret } from './secrets';

export interface DevCredentials {
  orgId: string;
  spaceId: string;
  keyId: string;
  secret: string;
  /** What was created, for the banner. */
  org: Org;
  space: Space;
}

/**
 * docs/design/0022-one-team-defaults.md: one team on one machine is not held back by a hosted plan's caps. ENTERPRISE
 * takes custom limits; these lift every cap that can be lifted (payload size and retention are
 * numbers on every plan, and stay ENTERPRISE's).
 */
export const uncappedLimits: Partial<PlanLimits> = {
  operationsPerMonth: null,
  agentsAtOnce: null,
  spaces: null,
  activeRuns: null,
  activeTasks: null,
  apiKeys: null,
  requestsPerMinute: null,
};

/**
 * The dev space's backlog when its organization is uncapped: as many READY or CLAIMED messages
 * as the largest mailbox holds (backlogLimit at most 100,000), not the default 1,000 a batch of
 * a few thousand tasks would meet as 429 BACKLOG_FULL. PUT /limits changes it like any other.
 */
export const uncappedSpaceBacklog = 100_000;

/**
 * docs/design/0001-workspaces-and-start-up.md, docs/design/0022-one-team-defaults.md: on a store with no organization, create organization `dev` on `plan`
 * (ENTERPRISE with no caps unless told otherwise), space `default` and one key with all four
 * permissions. Returns undefined when the store already has an organization.
 */
export async function bootstrapDev(store: Store, nowMs: number, random: Random, plan: Plan = 'ENTERPRISE'): Promise<DevCredentials | undefined> {
  const { keyId, secret, secretHash } = issueSecret(random);
  return store.transaction(async (tx) => {
    if ((await tx.orgs.count()) > 0) return undefined;
    const ctx = { tx, nowMs, random };
    const org = await tenancy.createOrg(ctx, { name: 'dev', plan, limits: plan === 'ENTERPRISE' ? uncappedLimits : undefined });
    const created = await tenancy.createSpace(ctx, org.id, 'default');
    const space = plan === 'ENTERPRISE' ? { ...created, limits: { maxBacklog: uncappedSpaceBacklog } } : created;
    if (space !== created) await tx.spaces.update(space);
    await tenancy.createKey(ctx, org.id, { name: 'dev', permissions: ['coordination_read', 'coordination_write', 'resource_config', 'usage_read'] }, keyId, secretHash);
    return { orgId: org.id, spaceId: space.id, keyId, secret, org, space };
  });
}

/** The organization a store was bootstrapped with (its oldest) and that organization's oldest space, for the banner of a later start. */
export async function firstTenant(store: Store): Promise<{ org: Org; space: Space | undefined } | undefined> {
  return store.read(async (tx) => {
    const [org] = await tx.orgs.list(null, 1);
    if (!org) return undefined;
    const [space] = await tx.spaces.listByOrg(org.id, null, 1);
    return { org, space };
  });
}
