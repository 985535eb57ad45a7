import { loop, sleep, type RoleContext } from './context';

/** Consumes units of the run's allowance as fast as it is let; QUOTA_EXHAUSTED waits a little. */
export async function runConsumer(ctx: RoleContext): Promise<void> {
  const { allowanceId, scopeId, proc } = ctx.config;
  await loop(ctx, async (n) => {
    try {
      await ctx.client.consume(allowanceId, { scopeId, holder: proc, units: 1 + Math.floor(ctx.random() * 3), workKey: `${proc}/${n}` });
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code !== 'QUOTA_EXHAUSTED' && code !== 'QUOTA_COOLDOWN') throw error;
      await sleep(50 + ctx.random() * 150);
    }
  });
}
