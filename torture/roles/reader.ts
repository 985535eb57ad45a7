import { loop, sleep, type RoleContext } from './context';

/**
 * Follows GET /events from the start of the journal by cursor, as a consumer of the journal
 * would. The history keeps every page, so the checker can prove this incarnation saw the
 * journal's events in order with none skipped.
 */
export async function runReader(ctx: RoleContext): Promise<void> {
  let cursor: string | undefined;
  await loop(ctx, async () => {
    const page = await ctx.client.listEvents({ cursor, limit: 200 });
    cursor = page.nextCursor;
    if (page.items.length === 0) await sleep(100);
  });
}
