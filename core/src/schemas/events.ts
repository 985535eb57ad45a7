import { z } from 'zod';
import { watchAggregateError, watchTypesError } from '../events/watch-filter';
import { timestamp, uuid, uuidInput } from './common';

export const eventView = z
  .object({
    eventId: z.string().describe('Journal position: a string of digits, increasing'),
    type: z.string(),
    aggregate: z.object({ type: z.string(), id: z.string() }),
    scopeId: uuid.nullable(),
    occurredAt: timestamp,
    data: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'Event' });
export type EventView = z.infer<typeof eventView>;

export const eventsQuery = z.object({
  cursor: z.string().regex(/^\d{1,40}$/, { message: 'must be a cursor returned as nextCursor' }).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

export const eventPage = z
  .object({
    items: z.array(eventView),
    nextCursor: z.string().describe('Send back as cursor to continue; never null, the journal has no end'),
    truncated: z
      .literal(true)
      .optional()
      .describe('Present (true) only when retention deleted events after the cursor given: the page answers from the oldest event kept. Absent otherwise'),
  })
  .meta({ id: 'EventPage' });

/** A refinement that refuses what `error` names, with its message (400 VALIDATION_FAILED naming the parameter). */
const checkedBy = (error: (raw: string) => string | null) => (raw: string, ctx: z.core.$RefinementCtx<string>) => {
  const message = error(raw);
  if (message !== null) ctx.addIssue({ code: 'custom', message });
};

/** The effective cap of a watch's wait, in seconds (docs/api.md "Fixed bounds": 0 to 30). */
export const maxWatchWaitSeconds = 30;

export const watchQuery = eventsQuery.extend({
  types: z.string().max(4000).superRefine(checkedBy(watchTypesError)).optional()
    .describe('Comma list of event types; an entry `prefix.*` matches every type starting with `prefix.` (e.g. `task.*,message.acked`)'),
  aggregate: z.string().max(200).superRefine(checkedBy(watchAggregateError)).optional()
    .describe('`type` (every aggregate of that type) or `type:id` (one aggregate), e.g. `mailbox:<id>`'),
  scopeId: uuidInput.optional().describe('Events whose scopeId, or a scope their data names, is this scope or a group gate scope below it at any depth'),
  waitSeconds: z.coerce.number().int().min(0).max(maxWatchWaitSeconds).default(0)
    .describe('Long poll: wait this long for a matching event (0 to 30; 0 answers at once)'),
});
