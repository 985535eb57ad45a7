import { z } from 'zod';
import { backlogLimitBounds, mailboxModes, messageStates } from '../messages/model';
import { stateFilter } from './barriers';
import { listQuery, name, pageOf, text, timestamp, uuid, uuidInput, workKey } from './common';

/** The longest a recv holds: the schema takes up to 120,000 ms, longer waits are shortened (docs/api.md "Fixed bounds"). */
export const maxRecvWaitMs = 30_000;

/**
 * Any JSON value, required. The body is already parsed JSON; what is refused here is a missing
 * member and U+0000 anywhere in it, which PostgreSQL's jsonb cannot store (a 500 otherwise).
 */
export const jsonValue = z
  .unknown()
  .refine((v) => v !== undefined, { message: 'is required' })
  .refine((v) => !JSON.stringify(v ?? null).includes('\\u0000'), { message: 'must not contain U+0000' })
  .describe('Any JSON value, at most 65,536 bytes as JSON');

const leaseSeconds = z.number().int().min(5).max(600).default(30).describe('5 to 600, default 30; above the space maxLeaseSeconds it is shortened (leaseExpiresAt tells)');
const token = z.string().min(1).max(200).describe('The token of the claim, from recv');

export const mailboxCreateBody = z.object({
  name,
  mode: z.enum(mailboxModes).default('WORK'),
  recipientId: text(1, 512).optional(),
  backlogLimit: z
    .number()
    .int()
    .min(backlogLimitBounds.min)
    .max(backlogLimitBounds.max)
    .default(backlogLimitBounds.default)
    .describe('READY plus CLAIMED messages the mailbox holds before a send is 429 BACKLOG_FULL; 1 to 100,000, default 1,000'),
});
export type MailboxCreateBody = z.infer<typeof mailboxCreateBody>;

export const sendBody = z.object({
  scopeId: uuidInput,
  payload: jsonValue,
  workKey: workKey.optional().describe('Deduplicates sends to this mailbox: a repeat answers 200 with the committed message'),
  deadline: timestamp.optional(),
});
export type SendBody = z.infer<typeof sendBody>;

export const recvBody = z.object({
  scopeId: uuidInput,
  holder: text(1, 512),
  holderSession: text(1, 512),
  leaseSeconds,
  waitMs: z.number().int().min(0).max(120_000).default(0).describe(`Long poll: wait for a message at most this long (effective cap ${maxRecvWaitMs} ms); 0 answers at once`),
});
export type RecvBody = z.infer<typeof recvBody>;

export const renewBody = z.object({ token, leaseSeconds });
export type RenewBody = z.infer<typeof renewBody>;

export const completeBody = z.object({
  token,
  result: z
    .object({
      mailboxId: uuidInput.optional(),
      scopeId: uuidInput.optional(),
      payload: jsonValue.optional(),
      workKey: workKey.optional(),
    })
    .refine((r) => (r.mailboxId === undefined) === (r.scopeId === undefined), { message: 'mailboxId and scopeId go together: both publish the result, neither only records it' })
    .optional(),
});
export type CompleteBody = z.infer<typeof completeBody>;

export const nackBody = z.object({ token, retry: z.boolean() });
export type NackBody = z.infer<typeof nackBody>;

export const messageListQuery = listQuery.extend({ state: stateFilter(messageStates) });
export type MessageListQuery = z.infer<typeof messageListQuery>;

export const mailboxView = z
  .object({
    id: uuid,
    name: z.string(),
    mode: z.enum(mailboxModes),
    recipientId: z.string().nullable(),
    backlogLimit: z.number().int(),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Mailbox' });
export type MailboxView = z.infer<typeof mailboxView>;
export const mailboxPage = pageOf(mailboxView);

export const messageView = z
  .object({
    id: uuid,
    mailboxId: uuid,
    scopeId: uuid,
    state: z.enum(messageStates),
    payload: z.unknown(),
    workKey: z.string().nullable(),
    deadline: timestamp.nullable(),
    attempt: z.number().int().describe('Claims so far'),
    holder: z.string().nullable().describe('Holder of the live or last claim'),
    holderSession: z.string().nullable(),
    leaseExpiresAt: timestamp.nullable().describe('Set while CLAIMED'),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Message' });
export type MessageView = z.infer<typeof messageView>;
export const messagePage = pageOf(messageView);

/** Shared with admission: a raw recv holds nothing, so its lists are empty and workLimit null. */
export const claimedResourcesView = z
  .object({
    pools: z.array(z.object({ name: z.string(), units: z.number().int() })),
    quotas: z.array(z.object({ name: z.string(), units: z.number().int() })),
    budgets: z.array(z.object({ name: z.string(), reservationId: uuid, amountMinor: z.string() })),
    workLimit: z.string().nullable(),
  })
  .describe('What this claim holds: pool units and the work-limit slot until complete, nack or expiry; quota units spent; budget reservations to settle (voided on nack or expiry)');

export const deliveryView = z
  .object({
    messageId: uuid,
    mailboxId: uuid,
    token: z.string().describe('Single use per claim: renew, complete or nack with it; after expiry, complete, nack or a new claim it answers 409 LEASE_LOST'),
    leaseExpiresAt: timestamp,
    attempt: z.number().int(),
    payload: z.unknown(),
    scopeId: uuid,
    workKey: z.string().nullable().describe("The message's workKey (a fired timer's is timer:<timerId>); null when it was sent without one"),
    claimed: claimedResourcesView,
  })
  .meta({ id: 'Delivery' });
export type DeliveryView = z.infer<typeof deliveryView>;

export const renewReply = z.object({ leaseExpiresAt: timestamp }).meta({ id: 'LeaseRenewed' });
export type RenewReply = z.infer<typeof renewReply>;

export const completeReply = z
  .object({ state: z.literal('ACKED'), resultMessageId: uuid.nullable().describe('The message the result was published as, when result named a mailboxId') })
  .meta({ id: 'MessageCompleted' });
export type CompleteReply = z.infer<typeof completeReply>;

export const nackReply = z.object({ state: z.enum(messageStates) }).meta({ id: 'MessageNacked' });
export type NackReply = z.infer<typeof nackReply>;
