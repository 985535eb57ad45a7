import { loop, sleep, type RoleContext } from './context';

/**
 * Submits tasks, each under its own taskKey; now and then submits a taskKey again as a new
 * request (create-or-join must answer the same task, created false).
 */
export async function runProducer(ctx: RoleContext): Promise<void> {
  const { scopeId, mailboxId, proc } = ctx.config;
  await loop(ctx, async (n) => {
    const again = n > 1 && ctx.random() < 0.1;
    const k = again ? 1 + Math.floor(ctx.random() * (n - 1)) : n;
    await ctx.client.submitTask({ scopeId, mailboxId, taskKey: `${proc}/${k}`, input: { proc, k } });
    await sleep(5 + ctx.random() * 20);
  });
}
