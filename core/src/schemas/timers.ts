import { z } from 'zod';
import { maxTimerDelaySeconds, timerStates } from '../timers/model';
import { stateFilter } from './barriers';
import { listQuery, pageOf, text, timestamp, uuid, uuidInput } from './common';
import { jsonValue } from './messages';

export const timerArmBody = z
  .object({
    timerKey: text(1, 512).describe('Names the timer in the space: a repeat with the same body answers 200 with the timer, another body 409'),
    scopeId: uuidInput,
    fireAt: timestamp.optional().describe('When to fire (at most 30 days ahead; one in the past fires at the next sweep). Exactly one of fireAt and delaySeconds'),
    delaySeconds: z.number().int().min(0).max(maxTimerDelaySeconds).optional().describe(`Fire this many seconds from now, 0 to ${maxTimerDelaySeconds} (30 days). Exactly one of fireAt and delaySeconds`),
    mailboxId: uuidInput.describe('Where the fired message goes'),
    payload: jsonValue.describe('The fired message\'s payload: any JSON value, at most the space\'s maxPayloadBytes'),
  })
  .refine((b) => (b.fireAt === undefined) !== (b.delaySeconds === undefined), { message: 'name exactly one of fireAt and delaySeconds', path: ['fireAt'] });
export type TimerArmBody = z.infer<typeof timerArmBody>;

export const timerListQuery = listQuery.extend({
  state: stateFilter(timerStates),
  scopeId: uuidInput.optional(),
});
export type TimerListQuery = z.infer<typeof timerListQuery>;

export const timerView = z
  .object({
    id: uuid,
    timerKey: z.string(),
    scopeId: uuid,
    mailboxId: uuid,
    payload: z.unknown().describe('What the fired message carries'),
    fireAt: timestamp.describe('When the timer is due'),
    state: z.enum(timerStates),
    firedAt: timestamp.nullable().describe('When the sweep fired it (at or after fireAt); null unless FIRED'),
    firedMessageId: uuid.nullable().describe('The message it sent (workKey timer:<id>); null unless FIRED'),
    cancelledAt: timestamp.nullable().describe('null unless CANCELLED'),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Timer' });
export type TimerView = z.infer<typeof timerView>;

export const timerPage = pageOf(timerView);
