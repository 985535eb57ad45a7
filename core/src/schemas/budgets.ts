import { z } from 'zod';
import { reservationStates } from '../budgets/model';
import { stateFilter } from './barriers';
import { listQuery, minorAmount, name, pageOf, positiveMinorAmount, text, timestamp, uuid, uuidInput, workKey } from './common';

export const budgetCreateBody = z.object({
  name,
  currency: z.string().regex(/^[A-Za-z]{3}$/, { message: 'must be exactly 3 letters' }),
  scale: z.number().int().min(0).max(9),
  limitMinor: minorAmount,
});
export type BudgetCreateBody = z.infer<typeof budgetCreateBody>;

export const reserveBody = z.object({
  scopeId: uuidInput,
  holder: text(1, 512),
  amountMinor: positiveMinorAmount,
  settleBy: timestamp.nullish(),
});
export type ReserveBody = z.infer<typeof reserveBody>;

export const settleBody = z.object({ reservationId: uuidInput, amountMinor: positiveMinorAmount, workKey });
export type SettleBody = z.infer<typeof settleBody>;

export const voidBody = z.object({ reservationId: uuidInput, workKey });
export type VoidBody = z.infer<typeof voidBody>;

export const reservationView = z
  .object({
    id: uuid,
    budgetId: uuid,
    scopeId: uuid,
    holder: z.string(),
    amountMinor: minorAmount,
    settledMinor: minorAmount,
    remainingMinor: minorAmount,
    state: z.enum(['ACTIVE', 'SETTLED', 'VOIDED']),
    settleBy: timestamp.nullable(),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Reservation' });
export type ReservationView = z.infer<typeof reservationView>;

export const budgetView = z
  .object({
    id: uuid,
    name: z.string(),
    currency: z.string(),
    scale: z.number().int(),
    limitMinor: minorAmount,
    reservedMinor: minorAmount,
    settledMinor: minorAmount,
    availableMinor: minorAmount,
    reservations: z.array(reservationView).describe('The ACTIVE reservations, oldest first'),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Budget' });
export type BudgetView = z.infer<typeof budgetView>;

export const budgetPage = pageOf(budgetView);

export const reservationListQuery = listQuery.extend({ state: stateFilter(reservationStates) });
export const reservationPage = pageOf(reservationView);
export const reservationParams = z.object({ spaceId: uuidInput, id: uuidInput, reservationId: uuidInput });

export const entryView = z
  .object({
    id: uuid,
    kind: z.enum(['SETTLE', 'VOID']),
    reservationId: uuid,
    amountMinor: minorAmount,
    workKey: z.string(),
    createdAt: timestamp,
  })
  .meta({ id: 'BudgetEntry' });

export const entryReply = z
  .object({ entry: entryView, replay: z.boolean(), reservation: reservationView, budget: budgetView })
  .meta({ id: 'BudgetEntryReply' });
export type EntryReply = z.infer<typeof entryReply>;
