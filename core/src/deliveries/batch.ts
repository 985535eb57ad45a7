import { assert } from '../assert';
import { eachItem, type ItemOutcome } from '../batches/items';
import type { OpContext } from '../context';
import type { NewEvent } from '../events/model';
import { leaseUntil, newToken } from '../messages/rules';
import { claimedEvent, lockMessage, receivableMailbox, renewLocked } from '../messages/service';
import { deliveryView } from '../messages/views';
import type { CompleteBody, CompleteReply, DeliveryView, NackBody, NackReply, RecvBody, RenewBody, RenewReply } from '../schemas/messages';
import { together } from '../store/together';
import * as tasks from '../tasks/service';
import { readyTopicsOf } from '../notifier';
import { completeLocked, lockDelivery, nackLocked } from './lifecycle';
import { PreloadedDeliveries } from './preload';

/**
 * The batch twins of the delivery routes (docs/design/0015-batches.md): each item exactly as its single route
 * would answer it, in order, each all or nothing by itself (batches/items.ts). What a batch
 * saves is round trips: the deliveries it names are locked and read in one, up front
 * (deliveries/preload.ts), and every item's writes ride with the commit.
 */

export type Addressed<T> = T & { messageId: string };

/** complete-batch. Only an item publishing its result to a mailbox can fail after it wrote (that send's limits). */
export async function completeMany(ctx: OpContext, items: readonly Addressed<CompleteBody>[]): Promise<ItemOutcome<CompleteReply>[]> {
  const preloaded = await PreloadedDeliveries.load(ctx, items.map((i) => i.messageId));
  return eachItem(ctx, items, (item) => item.result?.mailboxId !== undefined, async (item) => completeLocked(ctx, preloaded.take(item.messageId) ?? (await lockDelivery(ctx, item.messageId)), item));
}

/** nack-batch. */
export async function nackMany(ctx: OpContext, items: readonly Addressed<NackBody>[]): Promise<ItemOutcome<NackReply>[]> {
  const preloaded = await PreloadedDeliveries.load(ctx, items.map((i) => i.messageId));
  return eachItem(ctx, items, () => false, async (item) => nackLocked(ctx, preloaded.take(item.messageId) ?? (await lockDelivery(ctx, item.messageId)), item));
}

/** renew-batch: a renew touches only its message, so no task is read. */
export async function renewMany(ctx: OpContext, items: readonly Addressed<RenewBody>[]): Promise<ItemOutcome<RenewReply>[]> {
  const preloaded = await PreloadedDeliveries.loadMessages(ctx, items.map((i) => i.messageId));
  return eachItem(ctx, items, () => false, async (item) => renewLocked(ctx, preloaded.takeMessage(item.messageId) ?? (await lockMessage(ctx, item.messageId)), item));
}

/**
 * One recv-batch attempt: up to `maxMessages` of the oldest READY messages, in FIFO order (recv's
 * rule applied that many times), each with its own token; empty when none is free (the route
 * long-polls, on wakeTopics). Two round trips as recv: the claim, which moves the tasks of the
 * task deliveries it takes (MessageRepository.claimMany), rides with the mailbox read unless
 * gate scopes lie below the scope.
 */
export async function recvMany(ctx: OpContext, mailboxId: string, body: RecvBody, maxMessages: number): Promise<{ deliveries: DeliveryView[]; wakeTopics: string[] }> {
  const tokens = Array.from({ length: maxMessages }, () => newToken(ctx.random));
  const request = {
    spaceId: ctx.spaceId,
    mailboxId,
    scopeIds: [body.scopeId],
    holder: body.holder,
    holderSession: body.holderSession,
    tokenHashes: tokens.map((t) => t.tokenHash),
    leaseExpiresAt: leaseUntil(body.leaseSeconds, ctx.nowMs, ctx.limits.maxLeaseSeconds),
    nowMs: ctx.nowMs,
  };
  const [{ scopeIds }, first] = await together(
    receivableMailbox(ctx.tx, ctx.spaceId, mailboxId, body.holder, body.scopeId),
    ctx.tx.messages.claimMany({ ...request, unlessGated: true }),
  );
  const claimed = first.length > 0 || scopeIds.length === 1 ? first : await ctx.tx.messages.claimMany({ ...request, scopeIds });
  const events: NewEvent[] = [];
  const views: DeliveryView[] = [];
  for (const delivery of claimed) {
    const { message } = delivery;
    const k = request.tokenHashes.indexOf(message.tokenHash!);
    assert(k >= 0, `claimed message ${message.id} carries no token of this batch`);
    events.push(claimedEvent(message, body.scopeId), ...tasks.startedByClaim(delivery).events);
    views.push(deliveryView(message, tokens[k]!.token));
  }
  await ctx.tx.events.append(ctx.spaceId, ctx.nowMs, events);
  return { deliveries: views, wakeTopics: readyTopicsOf(mailboxId, scopeIds, ['plain', 'task']) };
}
