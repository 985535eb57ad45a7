import { loop, sleep, type RoleContext } from './context';

/**
 * Reserves from the run's budget, then settles in part or in full, or voids. Each settle and
 * void has a workKey of its own; now and then one is sent again as a new request (a fresh
 * Idempotency-Key), which must answer the first entry (replay) and move no money.
 */
export async function runSpender(ctx: RoleContext): Promise<void> {
  const { budgetId, scopeId, proc } = ctx.config;
  await loop(ctx, async (n) => {
    const amountMinor = String(1 + Math.floor(ctx.random() * 20));
    let reservation;
    try {
      reservation = await ctx.client.reserve(budgetId, { scopeId, holder: proc, amountMinor });
    } catch (error) {
      if ((error as { code?: string }).code === 'BUDGET_EXHAUSTED') return sleep(200);
      throw error;
    }
    await sleep(ctx.random() * 100);
    const workKey = `${proc}/${n}`;
    const settle = ctx.random() < 0.8;
    const body = settle
      ? { reservationId: reservation.id, workKey, amountMinor: String(1 + Math.floor(ctx.random() * Number(amountMinor))) }
      : { reservationId: reservation.id, workKey };
    const send = () => (settle ? ctx.client.settle(budgetId, body as { reservationId: string; workKey: string; amountMinor: string }) : ctx.client.voidReservation(budgetId, body));
    await send();
    if (ctx.random() < 0.15) await send();
  });
}
