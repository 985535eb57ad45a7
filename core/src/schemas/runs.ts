import { z } from 'zod';
import { childLimitBounds, runStates } from '../runs/model';
import { listQuery, pageOf, text, timestamp, uuid, uuidInput } from './common';
import { scopeCountsView } from './diagnostics';

/** Runs (docs/design/0019-runs.md; docs/api.md, "Runs"). */

export const runCreateBody = z.object({
  scopeId: uuidInput.optional().describe('The scopeId the run makes explicit; a new one when absent'),
  parentScopeId: uuidInput.optional().describe('An ACTIVE run this one is a child of'),
  name: text(1, 200).optional(),
  childLimit: z.number().int().min(childLimitBounds.min).max(childLimitBounds.max).default(childLimitBounds.default).describe('Child runs it may have, ever'),
});
export type RunCreateBody = z.infer<typeof runCreateBody>;

export const runView = z
  .object({
    scopeId: uuid,
    parentScopeId: uuid.nullable(),
    name: z.string().nullable(),
    state: z.enum(runStates),
    childLimit: z.number().int(),
    children: z.number().int().describe('Child runs created under it (ended ones included)'),
    cascading: z.boolean().describe('A cancel still cancelling what lives under it, in bounded batches in the background'),
    createdAt: timestamp,
    endedAt: timestamp.nullable(),
  })
  .meta({ id: 'Run' });
export type RunView = z.infer<typeof runView>;

export const runParams = z.object({ spaceId: uuidInput, scopeId: uuidInput });
export const runQuery = listQuery;

export const runDetailView = runView
  .extend({
    childRuns: pageOf(runView).describe("Its child runs by scopeId; `limit` and `cursor` page them"),
    counts: scopeCountsView.describe('What lives under its scopeId by state'),
  })
  .meta({ id: 'RunDetail' });
export type RunDetailView = z.infer<typeof runDetailView>;
