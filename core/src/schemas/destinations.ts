import { z } from 'zod';
import { timestamp, uuid, uuidInput } from './common';

/** An event type (`task.succeeded`) or a prefix pattern (`task.*`); `*` alone is not needed: [] means all. */
export const eventTypePattern = z
  .string()
  .max(200)
  .regex(/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*(\.\*)?$/, { message: 'must be an event type (task.succeeded) or a prefix pattern (task.*)' });

export const destinationCreateBody = z.object({
  url: z
    .string()
    .max(2048)
    .regex(/^https?:\/\//, { message: 'must start with http:// or https://' })
    .refine((url) => URL.canParse(url), { message: 'must be a valid URL' })
    .describe('Where events are POSTed; its host must not be a private address unless the server allows it'),
  eventTypes: z.array(eventTypePattern).max(100).default([]).describe('Event types or prefix.* patterns; empty (default) means every type'),
});
export type DestinationCreateBody = z.infer<typeof destinationCreateBody>;

export const destinationView = z
  .object({
    id: uuid,
    url: z.string(),
    eventTypes: z.array(z.string()),
    state: z.enum(['ACTIVE', 'PAUSED']),
    cursor: z.string().describe('Journal position of the last event handled (delivered or filtered out)'),
    lastDeliveredEventId: z.string().nullable(),
    deliveredCount: z.number().int(),
    failedCount: z.number().int().describe('Failed attempts, all time'),
    consecutiveFailures: z.number().int().describe('Failed attempts since the last success or resume'),
    failingSince: timestamp.nullable(),
    nextAttemptAt: timestamp,
    pausedAt: timestamp.nullable(),
    pausedReason: z.string().nullable(),
    lastError: z.string().nullable(),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Destination' });
export type DestinationView = z.infer<typeof destinationView>;

export const destinationCreated = destinationView
  .extend({ signingSecret: z.string().describe('whsec_ + base64; returned only here, never again') })
  .meta({ id: 'DestinationCreated' });
export type DestinationCreated = z.infer<typeof destinationCreated>;

export const destinationPage = z.object({ items: z.array(destinationView), nextCursor: z.string().nullable() });

export const deliveryAttemptView = z
  .object({
    id: uuid,
    destinationId: uuid,
    eventId: z.string(),
    attempt: z.number().int(),
    status: z.enum(['SUCCEEDED', 'FAILED']),
    httpStatus: z.number().int().nullable(),
    error: z.string().nullable(),
    responseBody: z.string().nullable().describe('The start of the reply body (at most 1 KiB)'),
    durationMs: z.number().int(),
    attemptedAt: timestamp,
    nextAttemptAt: timestamp.nullable(),
  })
  .meta({ id: 'DeliveryAttempt' });
export type DeliveryAttemptView = z.infer<typeof deliveryAttemptView>;

export const deliveryAttemptPage = z.object({ items: z.array(deliveryAttemptView), nextCursor: z.string().nullable() });

export const deliveriesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  cursor: z.string().min(1).max(1000).optional(),
  destinationId: uuidInput.optional(),
  eventId: z.string().regex(/^\d{1,40}$/, { message: 'must be an eventId' }).optional(),
  status: z.enum(['SUCCEEDED', 'FAILED']).optional(),
});
