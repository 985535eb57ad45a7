import { z } from 'zod';
import { claimLeaseBounds, claimStates, maxClaimKeyLength } from '../claims/model';
import { stateFilter } from './barriers';
import { listQuery, pageOf, text, timestamp, uuid, uuidInput } from './common';

const claimKey = text(1, maxClaimKeyLength).describe(`The key to hold exclusively in the space, 1 to ${maxClaimKeyLength} characters`);
const claimLeaseSeconds = z
  .number()
  .int()
  .min(claimLeaseBounds.minSeconds)
  .max(claimLeaseBounds.maxSeconds)
  .default(claimLeaseBounds.defaultSeconds)
  .describe('5 to 600, default 30; above the space maxLeaseSeconds it is shortened (leaseExpiresAt tells)');
const claimToken = z.string().min(1).max(200).describe('The token of the claim, from POST /claims');

export const claimCreateBody = z.object({
  claimKey,
  scopeId: uuidInput,
  holder: text(1, 512).describe('The stable logical worker name'),
  holderSession: text(1, 512).describe('This client instance; fresh per instance. With holder it gets a held claim back (200, same token): keep it as secret as the token'),
  leaseSeconds: claimLeaseSeconds,
});
export type ClaimCreateBody = z.infer<typeof claimCreateBody>;

export const claimRenewBody = z.object({ token: claimToken, leaseSeconds: claimLeaseSeconds });
export type ClaimRenewBody = z.infer<typeof claimRenewBody>;

export const claimReleaseBody = z.object({ token: claimToken });
export type ClaimReleaseBody = z.infer<typeof claimReleaseBody>;

export const claimListQuery = listQuery.extend({
  claimKey: text(1, maxClaimKeyLength).optional(),
  scopeId: uuidInput.optional(),
  state: stateFilter(claimStates),
});
export type ClaimListQuery = z.infer<typeof claimListQuery>;

const fencingToken = z
  .number()
  .int()
  .min(1)
  .describe('Grows by one with every new claim of the key, ever (a JSON number, always a safe integer); pass it to what the claim guards, which refuses a lower one');

export const claimView = z
  .object({
    id: uuid,
    claimKey: z.string(),
    scopeId: uuid,
    holder: z.string(),
    fencingToken,
    state: z.enum(claimStates).describe('HELD until released or its lease runs out; a HELD claim whose leaseExpiresAt passed is already free, and the sweep marks it EXPIRED'),
    leaseExpiresAt: timestamp,
    endedAt: timestamp.nullable().describe('When the claim was released or marked EXPIRED; null while HELD'),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Claim' });
export type ClaimView = z.infer<typeof claimView>;

/** POST /claims's reply: the claim with its token and session, the one place the token is ever shown. */
export const claimGrant = claimView
  .extend({
    token: z.string().describe('Proof of holding: renew and release take it; only this reply shows it'),
    holderSession: z.string(),
  })
  .meta({ id: 'ClaimGrant' });
export type ClaimGrant = z.infer<typeof claimGrant>;

export const claimPage = pageOf(claimView);
