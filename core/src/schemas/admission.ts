import { z } from 'zod';
import { deliveryView, recvBody } from './messages';
import { uuid, uuidInput } from './common';

/** The admission request: the receive request plus the mailbox (docs/api.md "Admission": shared by admit and recv). */
export const admitBody = recvBody.extend({ mailboxId: uuidInput });
export type AdmitBody = z.infer<typeof admitBody>;

/** What recv answers, plus the task the delivery belongs to (admit takes task deliveries only). */
export const admittedDeliveryView = deliveryView.extend({ taskId: uuid }).meta({ id: 'AdmittedDelivery' });
export type AdmittedDeliveryView = z.infer<typeof admittedDeliveryView>;
