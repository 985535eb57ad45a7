import type { OrgLoad, UsageRepository } from '@baton/core';
import { timeParam, toInt, toText } from '../codec';
import type { SqlQueryable } from '../driver';

interface CountRow {
  org_id: unknown;
  n: unknown;
}

const byOrg = (rows: CountRow[]): Map<string, number> => new Map(rows.map((r) => [toText(r.org_id), toInt(r.n)]));

/** Usage records (migration 021) and the load counts the plan limits compare against. */
export function sqlUsage(q: SqlQueryable): UsageRepository {
  return {
    async addOperations(month, operationsByOrg) {
      if (operationsByOrg.size === 0) return new Map();
      const rows = await q.query<CountRow>(
        `INSERT INTO usage_operations (org_id, month, operations)
           SELECT org_id, $3, operations FROM unnest($1::text[], $2::bigint[]) AS u (org_id, operations)
         ON CONFLICT (org_id, month) DO UPDATE SET operations = usage_operations.operations + EXCLUDED.operations
         RETURNING org_id, operations AS n`,
        [[...operationsByOrg.keys()], [...operationsByOrg.values()], month],
      );
      return byOrg(rows);
    },
    async operationsOf(month, orgIds) {
      if (orgIds.length === 0) return new Map();
      return byOrg(await q.query<CountRow>('SELECT org_id, operations AS n FROM usage_operations WHERE month = $1 AND org_id = ANY($2::text[])', [month, orgIds]));
    },
    async putRequestCounts(serverId, minute, requestsByOrg) {
      if (requestsByOrg.size === 0) return;
      await q.write(
        `INSERT INTO usage_request_minutes (minute, org_id, server_id, requests)
           SELECT $3, org_id, $4, requests FROM unnest($1::text[], $2::integer[]) AS u (org_id, requests)
         ON CONFLICT (minute, org_id, server_id) DO UPDATE SET requests = EXCLUDED.requests`,
        [[...requestsByOrg.keys()], [...requestsByOrg.values()], minute, serverId],
      );
    },
    async requestCountsOfOthers(serverId, minute) {
      return byOrg(await q.query<CountRow>('SELECT org_id, sum(requests) AS n FROM usage_request_minutes WHERE minute = $1 AND server_id <> $2 GROUP BY org_id', [minute, serverId]));
    },
    async purgeRequestCountsBefore(minute, limit) {
      const rows = await q.query(
        `DELETE FROM usage_request_minutes WHERE (minute, org_id, server_id) IN (
           SELECT minute, org_id, server_id FROM usage_request_minutes WHERE minute < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING 1`,
        [minute, limit],
      );
      return rows.length;
    },
    async purgeOperationsBefore(month, limit) {
      const rows = await q.query(
        `DELETE FROM usage_operations WHERE (org_id, month) IN (
           SELECT org_id, month FROM usage_operations WHERE month < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING 1`,
        [month, limit],
      );
      return rows.length;
    },
    async loadOf(orgIds, nowMs) {
      if (orgIds.length === 0) return new Map();
      // Live deliveries and leases from the spaces' totals in message_counts (migration 028):
      // a few rows per space, whatever the backlog. A task is PENDING or RUNNING exactly while its
      // delivery is READY or CLAIMED, so tasks need no index of their own on state (one would
      // end their HOT updates; migration 014).
      const [messages, pools, runs, claims] = await Promise.all([
        q.query<{ org_id: unknown; deliveries: unknown; claimed: unknown }>(
          `SELECT s.org_id, sum(c.live_tasks) AS deliveries, sum(c.claimed) AS claimed
             FROM spaces s JOIN message_counts c ON c.space_id = s.space_id AND c.mailbox_id = ''
            WHERE s.org_id = ANY($1::text[]) GROUP BY s.org_id`,
          [orgIds],
        ),
        q.query<CountRow>(
          `SELECT s.org_id, sum(p.in_use) AS n FROM spaces s JOIN pools p ON p.space_id = s.space_id
            WHERE s.org_id = ANY($1::text[]) GROUP BY s.org_id HAVING sum(p.in_use) > 0`,
          [orgIds],
        ),
        // runs_active (migration 025): only ACTIVE runs are in it.
        q.query<CountRow>(
          `SELECT s.org_id, count(*) AS n FROM spaces s JOIN runs r ON r.space_id = s.space_id AND r.state = 'ACTIVE'
            WHERE s.org_id = ANY($1::text[]) GROUP BY s.org_id`,
          [orgIds],
        ),
        // claims_held_key (migration 023) holds only HELD claims; one whose lease ran out is not a lease any more.
        q.query<CountRow>(
          `SELECT s.org_id, count(*) AS n FROM spaces s JOIN claims c ON c.space_id = s.space_id AND c.state = 'HELD' AND c.lease_expires_at > $2
            WHERE s.org_id = ANY($1::text[]) GROUP BY s.org_id`,
          [orgIds, timeParam(nowMs)],
        ),
      ]);
      const loads = new Map<string, OrgLoad>();
      const add = (orgId: string, added: Partial<OrgLoad>): void => {
        const load = loads.get(orgId) ?? { activeTasks: 0, liveLeases: 0, activeRuns: 0 };
        loads.set(orgId, { activeTasks: load.activeTasks + (added.activeTasks ?? 0), liveLeases: load.liveLeases + (added.liveLeases ?? 0), activeRuns: load.activeRuns + (added.activeRuns ?? 0) });
      };
      for (const r of messages) add(toText(r.org_id), { activeTasks: toInt(r.deliveries), liveLeases: toInt(r.claimed) });
      for (const [orgId, units] of byOrg(pools)) add(orgId, { liveLeases: units });
      for (const [orgId, active] of byOrg(runs)) add(orgId, { activeRuns: active });
      for (const [orgId, held] of byOrg(claims)) add(orgId, { liveLeases: held });
      return loads;
    },
  };
}
