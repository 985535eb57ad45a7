import { z } from 'zod';
import { claimedResourcesView, recvBody } from './messages';
import { timestamp, uuid, uuidInput } from './common';

/** The admission request: the receive request plus the mailbox (spec, shared by admit and recv). */
export const admitBody = recvBody.extend({ mailboxId: uuidInput });
export type AdmitBody = z.infer<typeof admitBody>;

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
