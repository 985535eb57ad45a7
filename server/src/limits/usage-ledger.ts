import { assert, monthOf, type OrgLoad } from '@baton/core';

/** How long an organization stays on this server's sync list after its last request. */
const watchMs = 120_000;

/** Operations not yet added to the store, by month then organization. */
export type PendingOperations = Map<string, Map<string, number>>;

/** Leases, tasks and runs this server added since a load was read: taken off when the next read, which sees them, lands. */
type LocalLoad = OrgLoad;

const noLoad: OrgLoad = { activeTasks: 0, liveLeases: 0, activeRuns: 0 };

/**
 * This server's view of each organization's usage between syncs: operations counted here and not
 * yet in the store (at most one sync interval of them is lost if the process dies), the month's
 * total as of the last sync, and the load (active tasks, live leases) as last read plus what this
 * server added since. Every number the limits compare is read from here, never from the store.
 */
export class UsageLedger {
  private pending: PendingOperations = new Map();
  private readonly synced = new Map<string, { month: string; operations: number }>();
  private readonly loads = new Map<string, OrgLoad>();
  private readonly local = new Map<string, LocalLoad>();
  /** Leases the claim tries running on this server hold (lease-hold.ts), not yet in the load. */
  private readonly held = new Map<string, number>();
  private readonly seen = new Map<string, number>();

  /** Marks an organization active here: it joins the sync list. */
  see(orgId: string, nowMs: number): void {
    this.seen.set(orgId, nowMs);
  }

  recordOperations(orgId: string, operations: number, nowMs: number): void {
    assert(Number.isInteger(operations) && operations >= 0, `operations must be a whole number, not ${operations}`);
    if (operations === 0) return;
    const month = monthOf(nowMs);
    const byOrg = this.pending.get(month) ?? new Map<string, number>();
    byOrg.set(orgId, (byOrg.get(orgId) ?? 0) + operations);
    this.pending.set(month, byOrg);
  }

  /** The month's operations: the store's total at the last sync plus what this server has not synced yet. */
  operationsOf(orgId: string, nowMs: number): number {
    const month = monthOf(nowMs);
    const synced = this.synced.get(orgId);
    return (synced?.month === month ? synced.operations : 0) + (this.pending.get(month)?.get(orgId) ?? 0);
  }

  /** Operations counted here this month and not yet in the store. */
  unsyncedOperationsOf(orgId: string, nowMs: number): number {
    return this.pending.get(monthOf(nowMs))?.get(orgId) ?? 0;
  }

  addLoad(orgId: string, added: Partial<LocalLoad>): void {
    const local = this.local.get(orgId) ?? noLoad;
    this.local.set(orgId, {
      activeTasks: local.activeTasks + (added.activeTasks ?? 0),
      liveLeases: local.liveLeases + (added.liveLeases ?? 0),
      activeRuns: local.activeRuns + (added.activeRuns ?? 0),
    });
  }

  /** Adds `leases` to what this server's tries hold for the organization (negative: gives them back). */
  holdLeases(orgId: string, leases: number): void {
    const after = (this.held.get(orgId) ?? 0) + leases;
    assert(Number.isInteger(after) && after >= 0, `${orgId} would hold ${after} leases`);
    if (after === 0) this.held.delete(orgId);
    else this.held.set(orgId, after);
  }

  heldLeasesOf(orgId: string): number {
    return this.held.get(orgId) ?? 0;
  }

  loadOf(orgId: string): OrgLoad {
    const read = this.loads.get(orgId) ?? noLoad;
    const local = this.local.get(orgId) ?? noLoad;
    return { activeTasks: read.activeTasks + local.activeTasks, liveLeases: read.liveLeases + local.liveLeases, activeRuns: read.activeRuns + local.activeRuns };
  }

  /** Organizations seen within the watch period; those older are forgotten. */
  watched(nowMs: number): string[] {
    for (const [orgId, atMs] of this.seen) {
      if (atMs > nowMs - watchMs) continue;
      this.seen.delete(orgId);
      this.synced.delete(orgId);
      this.loads.delete(orgId);
      this.local.delete(orgId);
    }
    return [...this.seen.keys()];
  }

  /** Hands the pending operations to a sync; it gives them back with `restore` if it fails. */
  takePending(): PendingOperations {
    const taken = this.pending;
    this.pending = new Map();
    return taken;
  }

  restore(taken: PendingOperations): void {
    for (const [month, byOrg] of taken) {
      for (const [orgId, operations] of byOrg) {
        const into = this.pending.get(month) ?? new Map<string, number>();
        into.set(orgId, (into.get(orgId) ?? 0) + operations);
        this.pending.set(month, into);
      }
    }
  }

  /** What this server added to loads before a sync read them: `applySync` takes it off, since the read counted it. */
  localLoadMark(): Map<string, LocalLoad> {
    return new Map([...this.local].map(([orgId, load]) => [orgId, { ...load }]));
  }

  /** A sync's reads: the month's totals and the loads of the organizations it asked about. */
  applySync(month: string, orgIds: readonly string[], totals: ReadonlyMap<string, number>, loads: ReadonlyMap<string, OrgLoad>, mark: ReadonlyMap<string, LocalLoad>): void {
    for (const orgId of orgIds) {
      this.synced.set(orgId, { month, operations: totals.get(orgId) ?? 0 });
      this.loads.set(orgId, loads.get(orgId) ?? noLoad);
      const before = mark.get(orgId);
      const local = this.local.get(orgId);
      if (!before || !local) continue;
      this.local.set(orgId, { activeTasks: local.activeTasks - before.activeTasks, liveLeases: local.liveLeases - before.liveLeases, activeRuns: local.activeRuns - before.activeRuns });
    }
  }
}
