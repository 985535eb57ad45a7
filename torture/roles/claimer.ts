import { loop, sleep, type RoleContext } from './context';

/**
 * Takes one of a few claim keys, holds it for a while (renewing once now and then), then
 * releases it, or sometimes walks away and lets the lease run out. CLAIM_HELD means another
 * holds it: wait and try again.
 */
export async function runClaimer(ctx: RoleContext): Promise<void> {
  const { scopeId, proc, claimKeys, leaseSeconds } = ctx.config;
  await loop(ctx, async () => {
    const claimKey = claimKeys[Math.floor(ctx.random() * claimKeys.length)]!;
    let grant;
    try {
      grant = await ctx.client.acquireClaim({ claimKey, scopeId, holder: proc, holderSession: proc, leaseSeconds });
    } catch (error) {
      if ((error as { code?: string }).code === 'CLAIM_HELD') return sleep(100 + ctx.random() * 200);
      throw error;
    }
    await sleep(ctx.random() * 1_000);
    if (ctx.random() < 0.3) {
      await ctx.client.renewClaim(grant.id, { token: grant.token, leaseSeconds }).catch(lostIsFine);
      await sleep(ctx.random() * 1_000);
    }
    if (ctx.random() < 0.1) return; // walks away: the lease runs out
    await ctx.client.releaseClaim(grant.id, { token: grant.token }).catch(lostIsFine);
  });
}

/** A paused or slow claimer may find its claim gone: LEASE_LOST is an answer, not a failure. */
function lostIsFine(error: unknown): void {
  if ((error as { code?: string }).code !== 'LEASE_LOST') throw error;
}
