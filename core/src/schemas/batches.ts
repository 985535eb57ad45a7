import { z } from 'zod';
import { maxBatchItems } from '../batches/items';
import { admitBody, admittedDeliveryView } from './admission';
import { errorEnvelope, uuid, uuidInput } from './common';
import { completeBody, completeReply, deliveryView, messageView, nackBody, nackReply, recvBody, renewBody, renewReply, sendBody } from './messages';
import { taskSubmitBody, taskSubmitReply } from './tasks';

/** The batch twins of the hot routes (docs/design/0015-batches.md): 1 to 100 items, each answered as its single route would. */

const count = (what: string) => z.number().int().min(1).max(maxBatchItems).describe(`How many ${what} at most (1 to ${maxBatchItems})`);
const items = <T extends z.ZodType>(item: T) => z.array(item).min(1).max(maxBatchItems);

export const admitBatchBody = admitBody.extend({ maxTasks: count('deliveries to admit') });
export type AdmitBatchBody = z.infer<typeof admitBatchBody>;
export const admitBatchReply = z.object({ items: z.array(admittedDeliveryView) }).meta({ id: 'AdmittedDeliveries' });

export const recvBatchBody = recvBody.extend({ maxMessages: count('messages to claim') });
export type RecvBatchBody = z.infer<typeof recvBatchBody>;
export const recvBatchReply = z.object({ items: z.array(deliveryView) }).meta({ id: 'Deliveries' });

const messageId = { messageId: uuidInput };

/** One item of a delivery batch: its single route's body plus the message it names. */
export const completeBatchItem = completeBody.extend(messageId);
export const nackBatchItem = nackBody.extend(messageId);
export const renewBatchItem = renewBody.extend(messageId);

export const completeBatchBody = z.object({ items: items(completeBatchItem) });
export type CompleteBatchBody = z.infer<typeof completeBatchBody>;
export const nackBatchBody = z.object({ items: items(nackBatchItem) });
export type NackBatchBody = z.infer<typeof nackBatchBody>;
export const renewBatchBody = z.object({ items: items(renewBatchItem) });
export type RenewBatchBody = z.infer<typeof renewBatchBody>;

/** One item of a delivery batch's reply: the status and body its single route would have answered. */
const deliveryItemReply = <T extends z.ZodType>(ok: T, id: string) =>
  z
    .object({
      items: z.array(
        z.object({
          messageId: uuid.nullable().describe("The item's messageId; null when the item failed its schema without a UUID there"),
          status: z.number().int().describe('The HTTP status the single route would have answered'),
          body: z.union([ok, errorEnvelope]).describe("The single route's reply body: its reply, or the error envelope"),
        }),
      ),
    })
    .meta({ id });

export const completeBatchReply = deliveryItemReply(completeReply, 'CompleteBatchReply');
export const nackBatchReply = deliveryItemReply(nackReply, 'NackBatchReply');
export const renewBatchReply = deliveryItemReply(renewReply, 'RenewBatchReply');

/** One item of a submit- or send-batch reply: the status (201, 200 or an error's) and body its single route would have answered. */
const createdItemReply = <T extends z.ZodType>(ok: T, id: string) =>
  z
    .object({
      items: z.array(
        z.object({
          status: z.number().int().describe('The HTTP status the single route would have answered'),
          body: z.union([ok, errorEnvelope]).describe("The single route's reply body: its reply, or the error envelope"),
        }),
      ),
    })
    .meta({ id });

export const submitBatchBody = z.object({ tasks: items(taskSubmitBody) });
export type SubmitBatchBody = z.infer<typeof submitBatchBody>;
export const submitBatchReply = createdItemReply(taskSubmitReply, 'SubmitBatchReply');

export const sendBatchBody = z.object({ messages: items(sendBody) });
export type SendBatchBody = z.infer<typeof sendBatchBody>;
export const sendBatchReply = createdItemReply(messageView, 'SendBatchReply');
