import { z } from 'zod';
import { barrierStates, maxBarrierTarget } from '../barriers/model';
import { listQuery, longPollQueryWaitMs, pageOf, text, timestamp, uuid, uuidInput } from './common';

/** The longest a GET /barriers/{id} holds: the schema takes up to 120,000 ms, longer waits are shortened. */
export const maxBarrierWaitMs = 30_000;

const epoch = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);

export const barrierCreateBody = z.object({
  scopeId: uuidInput,
  target: z.number().int().min(1).max(maxBarrierTarget).describe(`Distinct arrivals that release an epoch, 1 to ${maxBarrierTarget}`),
});
export type BarrierCreateBody = z.infer<typeof barrierCreateBody>;

export const arriveBody = z.object({
  arrivalKey: text(1, 512).describe('Who arrives; counted once per epoch, a repeat replays'),
  epoch: epoch.optional().describe('The epoch the caller arrives in; when the barrier has moved on, a new arrivalKey is 409 instead of counting in a later epoch'),
});
export type ArriveBody = z.infer<typeof arriveBody>;

/** nextEpoch takes no body (Fastify reads it as null), or `{epoch}`: the epoch the caller means to end. */
export const nextEpochBody = z
  .object({
    epoch: epoch.optional().describe('The epoch to end; when it is already over the call changes nothing and answers 200 with the current barrier'),
  })
  .nullish();
export type NextEpochBody = z.infer<typeof nextEpochBody>;

/**
 * A state filter, docs/design/0006-wire-shapes.md: `state=WAITING` or `state=WAITING,RELEASED`. Undefined when
 * absent (no filter); duplicates are dropped.
 */
export function stateFilter<const S extends readonly [string, ...string[]]>(states: S) {
  const known = new Set<string>(states);
  return z
    .string()
    .refine((s) => s.split(',').every((part) => known.has(part)), { message: `must be one or more of ${states.join(', ')}, comma-separated` })
    .transform((s) => [...new Set(s.split(','))] as S[number][])
    .optional();
}

export const barrierListQuery = listQuery.extend({ state: stateFilter(barrierStates) });
export type BarrierListQuery = z.infer<typeof barrierListQuery>;

export const barrierGetQuery = z.object({
  waitMs: longPollQueryWaitMs('the barrier leaves WAITING', maxBarrierWaitMs),
  epoch: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional().describe('Wait on this epoch: answer at once when the barrier is in another one'),
});
export type BarrierGetQuery = z.infer<typeof barrierGetQuery>;

export const barrierView = z
  .object({
    id: uuid,
    scopeId: uuid,
    state: z.enum(barrierStates),
    epoch: z.number().int(),
    target: z.number().int(),
    arrivals: z.number().int().describe('Distinct arrivalKeys counted in the current epoch'),
    releasedAt: timestamp.nullable().describe('When the current epoch was released; null while it is not'),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Barrier' });
export type BarrierView = z.infer<typeof barrierView>;

export const arriveReply = barrierView
  .extend({ replay: z.boolean().describe('True when this arrivalKey was already counted in the epoch: nothing changed') })
  .meta({ id: 'BarrierArrival' });
export type ArriveReply = z.infer<typeof arriveReply>;

export const barrierPage = pageOf(barrierView);
