import { z } from 'zod';
import { recvBody } from './messages';
import { timestamp, uuid, uuidInput } from './common';

/** The admission request: the receive request plus the mailbox (spec, shared by admit and recv). */
export const admitBody = recvBody.extend({ mailboxId: uuidInput });
export type AdmitBody = z.infer<typeof admitBody>;

export const claimedResourcesView = z
  .object({
    pools: z.array(z.object({ name: z.string(), units: z.number().int() })),
    quotas: z.array(z.object({ name: z.string(), units: z.number().int() })),
    budgets: z.array(z.object({ name: z.string(), reservationId: uuid, amountMinor: z.string() })),
    workLimit: z.string().nullable(),
  })
  .describe('What this claim holds: pool units and the work-limit slot until complete, nack or expiry; quota units spent; budget reservations to settle (voided on nack or expiry)');

export const admittedDeliveryView = z
  .object({
    messageId: uuid,
    mailboxId: uuid,
    taskId: uuid,
    token: z.string().describe('Single use per claim: renew, complete or nack with it; after expiry, complete, nack or a new claim it answers 409 LEASE_LOST'),
    leaseExpiresAt: timestamp,
    attempt: z.number().int(),
    payload: z.unknown(),
    scopeId: uuid,
    claimed: claimedResourcesView,
  })
  .meta({ id: 'AdmittedDelivery' });
export type AdmittedDeliveryView = z.infer<typeof admittedDeliveryView>;
