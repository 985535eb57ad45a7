import { z } from 'zod';
import { timestamp, uuid } from './common';

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
  })
  .meta({ id: 'EventPage' });
