import type { JournalEvent, Store } from '@baton/core';
import type { Ledger } from './ledger';
import type { SeenEvent } from './agents/watcher';
import { checkAllowances } from './checks/allowances';
import { firstSightings } from './checks/watch';
import { checkMessagesFinal, type MessageLedger } from './checks/messages';
import type { TaskWorkload } from './agents/task-workload';

/**
 * The invariants, checked against the store itself (the oracle) and against what clients were
 * told (the ledger). `checkStep` runs after every step; `checkFinal` once the liveness phase
 * has let all outstanding work finish.
 */
export async function checkStep(store: Store, spaceId: string, budgetIds: string[]): Promise<string[]> {
  const problems: string[] = [];
  await store.read(async (tx) => {
    for (const id of budgetIds) {
      const b = await tx.budgets.get(spaceId, id);
      if (!b) {
        problems.push(`budget ${id} is gone`);
        continue;
      }
      if (b.availableMinor < 0n || b.reservedMinor < 0n || b.settledMinor < 0n) problems.push(`budget ${b.name}: negative balance ${b.availableMinor}/${b.reservedMinor}/${b.settledMinor}`);
      if (b.limitMinor !== b.availableMinor + b.reservedMinor + b.settledMinor) {
        problems.push(`budget ${b.name}: limit ${b.limitMinor} != available ${b.availableMinor} + reserved ${b.reservedMinor} + settled ${b.settledMinor}`);
      }
    }
  });
  return problems;
}

export async function readJournal(store: Store, spaceId: string): Promise<JournalEvent[]> {
  const all: JournalEvent[] = [];
  for (let after = '0'; ; ) {
    const page = await store.read((tx) => tx.events.listAfter(spaceId, after, 500));
    if (page.length === 0) return all;
    all.push(...page);
    after = page.at(-1)!.eventId;
  }
}

interface JournalEntry {
  budgetId: string;
  kind: 'SETTLE' | 'VOID';
  entryId: string;
  reservationId: string;
  amountMinor: bigint;
  workKey: string;
  reservationState: string;
}

export interface MessageCheck {
  mailboxIds: readonly string[];
  ledger: MessageLedger;
  /** The simulated time now: no message may be CLAIMED past its lease by then. */
  nowMs: number;
}

export interface TaskCheck {
  workload: TaskWorkload;
  /** The simulated time now: no delivery may be CLAIMED past its lease by then. */
  nowMs: number;
  /** Check FIFO admission: only where the journal order is the commit order (not under concurrent PostgreSQL sessions). */
  fifo: boolean;
  /** The last deadline sweep ran after this time: an undecided group whose deadline is before it is a violation. */
  sweptUntilMs: number;
}

export async function checkFinal(store: Store, spaceId: string, budgetIds: string[], ledger: Ledger, watched: SeenEvent[], messages?: MessageCheck, tasks?: TaskCheck): Promise<string[]> {
  const problems: string[] = [];
  const journal = await readJournal(store, spaceId);
  // The task budget's reservations are made by admission and closed by task workers, not by the spenders the ledger follows.
  const taskBudgetIds = new Set(tasks?.workload.world.budgets.map((b) => b.id) ?? []);
  const spending = journal.filter((e) => !(e.aggregateType === 'budget' && taskBudgetIds.has(e.aggregateId)));
  checkReservations(spending, ledger, problems);
  const entries = checkEntries(spending, ledger, problems);
  await checkBalances(store, spaceId, budgetIds, entries, problems);
  checkWatcher(journal, watched, problems);
  checkAllowances(journal, problems);
  if (messages) problems.push(...(await checkMessagesFinal(store, spaceId, messages.mailboxIds, journal, messages.ledger, messages.nowMs)));
  if (tasks) problems.push(...(await tasks.workload.checkFinal(store, journal, tasks.nowMs, tasks.fifo, tasks.sweptUntilMs)));
  return problems;
}

/** Each Idempotency-Key made one reservation (its scopeId is unique to the key), and every acknowledged one exists. */
function checkReservations(journal: JournalEvent[], ledger: Ledger, problems: string[]): void {
  const byScope = new Map<string, string>();
  const ids = new Set<string>();
  for (const e of journal.filter((e) => e.type === 'budget.reserved')) {
    const id = String(e.data.reservationId);
    ids.add(id);
    const other = byScope.get(String(e.scopeId));
    if (other) problems.push(`one Idempotency-Key applied twice: reservations ${other} and ${id} for scope ${e.scopeId}`);
    byScope.set(String(e.scopeId), id);
  }
  for (const [key, r] of ledger.reserves) {
    if (r.reservationId && !ids.has(r.reservationId)) problems.push(`acknowledged reservation ${r.reservationId} (key ${key}) is not in the store`);
  }
}

function checkEntries(journal: JournalEvent[], ledger: Ledger, problems: string[]): JournalEntry[] {
  const entries: JournalEntry[] = journal
    .filter((e) => e.type === 'budget.settled' || e.type === 'budget.voided')
    .map((e) => ({
      budgetId: e.aggregateId,
      kind: e.type === 'budget.settled' ? 'SETTLE' : 'VOID',
      entryId: String(e.data.entryId),
      reservationId: String(e.data.reservationId),
      amountMinor: BigInt(String(e.data.amountMinor)),
      workKey: String(e.data.workKey),
      reservationState: String(e.data.reservationState),
    }));
  const seenKeys = new Set<string>();
  const closed = new Map<string, string>();
  for (const entry of entries) {
    const key = `${entry.budgetId} ${entry.workKey}`;
    if (seenKeys.has(key)) problems.push(`workKey ${entry.workKey} applied twice`);
    seenKeys.add(key);
    const before = closed.get(entry.reservationId);
    if (before) problems.push(`reservation ${entry.reservationId} took a ${entry.kind} after it was ${before}`);
    if (entry.reservationState !== 'ACTIVE') closed.set(entry.reservationId, entry.reservationState);

    const requested = ledger.entries.get(key);
    if (!requested) {
      problems.push(`${entry.kind} ${entry.entryId} with workKey ${entry.workKey} was applied but never requested`);
      continue;
    }
    if (requested.entryId !== undefined && requested.entryId !== entry.entryId) problems.push(`workKey ${entry.workKey}: store has entry ${entry.entryId}, client was told ${requested.entryId}`);
    if (requested.kind === 'SETTLE' && requested.amountMinor !== entry.amountMinor) problems.push(`settle ${entry.workKey}: applied ${entry.amountMinor}, requested ${requested.amountMinor}`);
    if (requested.entryId === undefined && !ledger.crashedSessions.has(requested.session)) {
      problems.push(`${entry.kind} ${entry.workKey} applied but never acknowledged to its live client`);
    }
  }
  const applied = new Set(entries.map((e) => e.entryId));
  for (const [key, r] of ledger.entries) {
    if (r.entryId && !applied.has(r.entryId)) problems.push(`acknowledged entry ${r.entryId} (${key}) is not in the store`);
  }
  return entries;
}

/** Conservation, nothing left reserved, and settled equal to the distinct settle entries. */
async function checkBalances(store: Store, spaceId: string, budgetIds: string[], entries: JournalEntry[], problems: string[]): Promise<void> {
  await store.read(async (tx) => {
    for (const id of budgetIds) {
      const b = await tx.budgets.get(spaceId, id);
      if (!b) continue;
      const settled = entries.filter((e) => e.budgetId === id && e.kind === 'SETTLE').reduce((sum, e) => sum + e.amountMinor, 0n);
      if (b.settledMinor !== settled) problems.push(`budget ${b.name}: settled ${b.settledMinor} but its settle entries sum to ${settled}`);
      const active = await tx.reservations.listActive(spaceId, id);
      if (active.length > 0 || b.reservedMinor !== 0n) problems.push(`budget ${b.name}: ${active.length} reservations still ACTIVE (${b.reservedMinor} reserved) after the liveness phase`);
    }
  });
}

/** The watcher saw every committed event exactly once after removing duplicates, in order. */
function checkWatcher(journal: JournalEvent[], watched: SeenEvent[], problems: string[]): void {
  const unique = firstSightings(watched.map((e) => e.eventId));
  const seen = new Set(unique);
  const expected = journal.map((e) => e.eventId);
  const missing = expected.filter((id) => !seen.has(id));
  if (missing.length > 0) problems.push(`the watcher never saw ${missing.length} committed events (first ${missing[0]})`);
  const extra = unique.filter((id) => !expected.includes(id));
  if (extra.length > 0) problems.push(`the watcher saw ${extra.length} events that are not in the journal`);
  const order = unique.filter((id) => expected.includes(id));
  const journalOrder = expected.filter((id) => seen.has(id));
  if (order.join() !== journalOrder.join()) problems.push('the watcher saw events out of journal order');
}
