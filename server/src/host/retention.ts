import { assert, effectiveLimits, type Clock, type RetentionSpace, type SpaceCutoff, type Store, type Tx } from '@baton/core';

const dayMs = 24 * 60 * 60 * 1000;
/** The journal keeps the longer of the plan window and this (docs/design/0017-retention.md). */
export const journalMinimumRetentionDays = 30;
/** Webhook delivery audit, whatever the plan (docs/design/0017-retention.md). */
export const deliveryAuditRetentionDays = 365;

export interface RetentionBounds {
  /** Spaces one pass covers: the sweep pages through every space, this many at a time. */
  spacesPerPass: number;
  /** Rows one batch (one short transaction) handles. */
  batchSize: number;
  /** Batches of one kind (tasks, messages, events, delivery audit) a pass runs at most. */
  batchesPerPass: number;
}

/** A page of 200 spaces, batches of 500 rows, at most 20 batches of each kind a pass. */
export const defaultRetentionBounds: RetentionBounds = { spacesPerPass: 200, batchSize: 500, batchesPerPass: 20 };

/**
 * Retention past the plan window (docs/design/0017-retention.md), apart from idempotency (background.ts) and
 * usage: finished tasks tombstoned, finished messages and ended claims deleted after the
 * organization's plan window (a claim key's fencing sequence stays), journal events after the longer of it and 30 days, webhook delivery audit after 365 days.
 *
 * Windows are per organization, so each pass takes the next page of spaces with their
 * organization's plan (RetentionRepository.spacesAfter), computes each space's cutoff with
 * effectiveLimits (plan logic stays in tenancy/plans.ts, not copied into SQL), and purges by
 * space id: every statement is one index range per space, bounded by its batch size. A pass so
 * does bounded work however many organizations, spaces and rows exist; the cursor wraps around,
 * so every space is visited once per (spaces / spacesPerPass) passes. A page whose backlog
 * outlasts the pass's batches is taken again by the next pass before the cursor moves on.
 *
 * Each batch is its own transaction and every purge skips rows others hold (SKIP LOCKED), so
 * several servers sweep at once: their cursors are their own, and at worst two visit a page
 * together and split its rows. Cutoffs come from the injected clock, once per pass.
 */
export class RetentionSweep {
  private afterSpaceId: string | null = null;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly bounds: RetentionBounds = defaultRetentionBounds,
  ) {
    assert(bounds.spacesPerPass >= 1 && bounds.batchSize >= 1 && bounds.batchesPerPass >= 1, 'retention bounds must be positive');
  }

  async pass(): Promise<void> {
    const nowMs = this.clock.now();
    const spaces = await this.store.read((tx) => tx.retention.spacesAfter(this.afterSpaceId, this.bounds.spacesPerPass));
    const planCutoffs = spaces.map((s) => cutoffOf(s, nowMs, planRetentionDays(s)));
    const journalCutoffs = spaces.map((s) => cutoffOf(s, nowMs, Math.max(planRetentionDays(s), journalMinimumRetentionDays)));
    const drained = [
      await this.drain((tx, limit) => tx.tasks.tombstoneFinished(planCutoffs, limit)),
      await this.drain((tx, limit) => tx.messages.purgeFinished(planCutoffs, limit)),
      await this.drain((tx, limit) => tx.claims.purgeEnded(planCutoffs, limit)),
      await this.drain((tx, limit) => tx.events.purgeBefore(journalCutoffs, limit)),
    ].every(Boolean);
    await this.drain((tx, limit) => tx.deliveryAttempts.purgeUntil(nowMs - deliveryAuditRetentionDays * dayMs, limit));
    if (drained) this.afterSpaceId = spaces.length < this.bounds.spacesPerPass ? null : spaces.at(-1)!.spaceId;
  }

  /** Runs batches while they come back full, up to the pass's budget: true when nothing due is left. */
  private async drain(batch: (tx: Tx, limit: number) => Promise<number>): Promise<boolean> {
    const { batchSize, batchesPerPass } = this.bounds;
    for (let n = 0; n < batchesPerPass; n++) {
      const purged = await this.store.transaction((tx) => batch(tx, batchSize));
      assert(purged >= 0 && purged <= batchSize, `retention batch purged ${purged} of at most ${batchSize}`);
      if (purged < batchSize) return true;
    }
    return false;
  }
}

function planRetentionDays(space: RetentionSpace): number {
  const days = effectiveLimits(space.org).retentionDays;
  assert(Number.isFinite(days) && days > 0, `space ${space.spaceId}: retention of ${days} days`);
  return days;
}

const cutoffOf = (space: RetentionSpace, nowMs: number, retentionDays: number): SpaceCutoff => ({
  spaceId: space.spaceId,
  cutoffMs: nowMs - retentionDays * dayMs,
});
