import { sleep, loop, type RoleContext } from './context';

/**
 * An adversarial worker on the raw routes: admits one delivery at a time and sometimes works
 * past its lease without renewing, then completes anyway. The server must answer LEASE_LOST
 * whenever the lease ran out, whoever holds the delivery now; the runtime's worker never sends
 * such a complete, so only this role shows the server's own lease check.
 */
export async function runRawWorker(ctx: RoleContext): Promise<void> {
  const { mailboxId, scopeId, proc, leaseSeconds } = ctx.config;
  await loop(ctx, async () => {
    const delivery = await ctx.client.admit({ mailboxId, scopeId, holder: proc, holderSession: proc, leaseSeconds, waitMs: 1_000 });
    if (!delivery) return;
    // An overrun ends just past the lease, often before the sweep (every second) has taken the
    // delivery back: the window in which only the server's own check of the lease's end refuses it.
    const overrun = ctx.random() < 0.5;
    await sleep(overrun ? leaseSeconds * 1000 + 100 + ctx.random() * 300 : ctx.random() * 200);
    const outcome = { by: proc, messageId: delivery.messageId, attempt: delivery.attempt };
    ctx.history.note('outcome', { taskId: delivery.taskId, outcome });
    try {
      await ctx.client.complete(delivery.messageId, { token: delivery.token, result: { payload: outcome } });
    } catch (error) {
      // LEASE_LOST is the right answer to an overrun; the history has it.
      if ((error as { code?: string }).code !== 'LEASE_LOST') throw error;
    }
  });
}
