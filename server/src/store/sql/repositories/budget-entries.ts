import type { BudgetEntry, BudgetEntryRepository, EntryKind } from '@baton/core';
import { bigintParam, timeParam, toBigint, toMs, toText } from '../codec';
import type { SqlQueryable } from '../driver';

interface EntryRow {
  space_id: unknown;
  id: unknown;
  budget_id: unknown;
  reservation_id: unknown;
  kind: unknown;
  amount_minor: unknown;
  work_key: unknown;
  created_at: unknown;
}

const columns = 'space_id, id, budget_id, reservation_id, kind, amount_minor, work_key, created_at';

function toEntry(row: EntryRow): BudgetEntry {
  return {
    spaceId: toText(row.space_id),
    id: toText(row.id),
    budgetId: toText(row.budget_id),
    reservationId: toText(row.reservation_id),
    kind: toText(row.kind) as EntryKind,
    amountMinor: toBigint(row.amount_minor),
    workKey: toText(row.work_key),
    createdAt: toMs(row.created_at),
  };
}

export function sqlBudgetEntries(q: SqlQueryable): BudgetEntryRepository {
  return {
    async insert(e) {
      await q.write(`INSERT INTO budget_entries (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [
        e.spaceId,
        e.id,
        e.budgetId,
        e.reservationId,
        e.kind,
        bigintParam(e.amountMinor),
        e.workKey,
        timeParam(e.createdAt),
      ]);
    },
    async getByWorkKey(spaceId, budgetId, workKey) {
      const [row] = await q.query<EntryRow>(`SELECT ${columns} FROM budget_entries WHERE space_id = $1 AND budget_id = $2 AND work_key = $3`, [
        spaceId,
        budgetId,
        workKey,
      ]);
      return row && toEntry(row);
    },
  };
}
