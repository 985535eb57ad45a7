import { z } from 'zod';
import { errorCodes } from '../errors';

/** Wire building blocks shared by every resource (docs/design/0006-wire-shapes.md). */
/** Any UUID-shaped id (8-4-4-4-12 hex digits, any version), as clients generate them. */
export const uuid = z.guid({ message: 'must be a UUID' });
/** An id sent by a client: read in lower case, the case Baton stores and compares ids in. */
export const uuidInput = uuid.transform((id) => id.toLowerCase());
export const timestamp = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time' });
export const minorAmount = z
  .string()
  .regex(/^\d+$/, { message: 'must be a string of digits (minor units)' })
  .max(18, { message: 'must be at most 18 digits' });
export const positiveMinorAmount = minorAmount.refine((s) => /[1-9]/.test(s), { message: 'must be greater than zero' });
/**
 * Text a client names things with. U+0000 is refused: PostgreSQL cannot store it in text or
 * jsonb, so letting it through would turn a client's mistake into a 500.
 */
export function text(min: number, max: number) {
  return z.string().min(min).max(max).regex(/^[^\u0000]*$/, { message: 'must not contain U+0000' });
}
export const workKey = text(1, 512);
export const name = text(1, 200);

export const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  cursor: z.string().min(1).max(1000).optional(),
});

export const idParams = z.object({ spaceId: uuidInput, id: uuidInput });
export const spaceParams = z.object({ spaceId: uuidInput });

export const errorEnvelope = z
  .object({
    error: z.object({
      code: z.enum(errorCodes),
      message: z.string(),
      requestId: z.string(),
      details: z
        .union([
          z.array(z.object({ path: z.string(), message: z.string() })).describe('VALIDATION_FAILED and most other codes: each problem with its path'),
          z.object({ holder: z.string(), leaseExpiresAt: timestamp }).describe('CLAIM_HELD: who holds the key, and when its live lease runs out'),
        ])
        .optional(),
    }),
  })
  .meta({ id: 'Error' });

export function pageOf<T extends z.ZodType>(item: T) {
  return z.object({ items: z.array(item), nextCursor: z.string().nullable() });
}

/** Declared for the OpenAPI document; the idempotency runner checks the header itself. */
export const idempotencyHeaders = z.looseObject({
  'idempotency-key': z.string().min(1).max(255).optional().describe('1 to 255 characters; replies replay for 24 hours. Required on operations marked Idem'),
});

/**
 * The waitMs query of a long-polling GET: 0 to 120,000 in the schema (docs/api.md "Fixed bounds"), held at most
 * `capMs` (longer waits are shortened); 0 or absent answers at once. `until` says what ends it.
 */
export const longPollQueryWaitMs = (until: string, capMs: number) =>
  z.coerce
    .number()
    .int()
    .min(0)
    .max(120_000)
    .optional()
    .describe(`Long poll: hold the reply until ${until}, at most this long (effective cap ${capMs} ms); 0 or absent answers at once`);
