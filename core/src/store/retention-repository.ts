import type { Org } from '../tenancy/model';

/** A space as the retention sweep sees it: whose plan sets its window (docs/design/0017-retention.md). */
export interface RetentionSpace {
  spaceId: string;
  org: Pick<Org, 'plan' | 'limits'>;
}

/** A space and the instant at or before which its rows are past their retention window. */
export interface SpaceCutoff {
  spaceId: string;
  cutoffMs: number;
}

/**
 * What the retention sweep pages through. Retention is per organization (plans differ), so the
 * sweep walks spaces a page at a time with their organization's plan, computes each space's
 * cutoff with effectiveLimits, and deletes by space: a pass does bounded work however many
 * organizations, spaces and rows there are, and plan logic stays in one place (tenancy/plans.ts).
 */
export interface RetentionRepository {
  /** Spaces with an id after `afterSpaceId` (exclusive; null from the first), in id order, with their organization's plan. */
  spacesAfter(afterSpaceId: string | null, limit: number): Promise<RetentionSpace[]>;
}
