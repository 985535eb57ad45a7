import { eachItem, type ItemOutcome } from '../batches/items';
import type { OpContext } from '../context';
import type { MessageView, SendBody } from '../schemas/messages';
import { messageView } from './views';
import { sendTargetOf, sendTo } from './service';
import { governingRun, refuseIfEnded } from '../runs/guard';
import { together } from '../store/together';

/**
 * send-batch (docs/design/0015-batches.md): each message as POST /mailboxes/{id}/messages would answer it, in
 * order. The mailbox and its backlog, and the runs of the items' scopes, are read once; each
 * send counts against the limits of the next (sendTo keeps the target current). A send fails,
 * when it fails, before it writes (prepareSend), so no item needs a savepoint. Every item's
 * events are appended together.
 */
export async function sendMany(ctx: OpContext, mailboxId: string, bodies: readonly SendBody[]): Promise<ItemOutcome<{ created: boolean; view: MessageView }>[]> {
  const scopeIds = [...new Set(bodies.map((b) => b.scopeId))];
  // The scopes' runs first, locked against their ends (docs/lock-order.md), in the mailbox's round trip.
  const [runs, target] = await together(together(...scopeIds.map((id) => governingRun(ctx, id))), sendTargetOf(ctx, mailboxId));
  const runOf = new Map(scopeIds.map((id, i) => [id, runs[i]]));
  const events: Parameters<typeof ctx.tx.events.append>[2] = [];
  const outcomes = await eachItem(ctx, bodies, () => false, async (body) => {
    // An item under an ended run answers 409 by itself (docs/design/0019-runs.md).
    refuseIfEnded(runOf.get(body.scopeId), body.scopeId);
    const sent = await sendTo(ctx, target, body);
    events.push(...sent.events);
    return { created: sent.created, view: messageView(sent.message) };
  });
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, events);
  return outcomes;
}
