import type { History } from '../history';
import { callsOf, groupBy } from './calls';
import type { Snapshot } from './snapshot';

/**
 * Budgets conserve and no settle applied twice: limit = reserved + settled + available; the
 * budget's settled sum is its reservations' and its journal entries'; each workKey has at most
 * one entry; every acknowledged settle or void is an entry of the journal with its amount; and
 * every acknowledged reservation exists.
 */
export function checkBudgets(history: History, snapshot: Snapshot): string[] {
  const { budget, reservations } = snapshot;
  const out: string[] = [];
  const big = (s: string): bigint => BigInt(s);
  if (big(budget.limitMinor) !== big(budget.reservedMinor) + big(budget.settledMinor) + big(budget.availableMinor)) {
    out.push(`budget ${budget.id} does not conserve: limit ${budget.limitMinor} != reserved ${budget.reservedMinor} + settled ${budget.settledMinor} + available ${budget.availableMinor}`);
  }
  const settledOfReservations = reservations.reduce((sum, r) => sum + big(r.settledMinor), 0n);
  const reservedOfActive = reservations.filter((r) => r.state === 'ACTIVE').reduce((sum, r) => sum + big(r.remainingMinor), 0n);
  if (settledOfReservations !== big(budget.settledMinor)) out.push(`budget ${budget.id}: settled ${budget.settledMinor}, but its reservations settled ${settledOfReservations}`);
  if (reservedOfActive !== big(budget.reservedMinor)) out.push(`budget ${budget.id}: reserved ${budget.reservedMinor}, but its ACTIVE reservations hold ${reservedOfActive}`);
  const entries = snapshot.events.filter((e) => e.type === 'budget.settled' && e.aggregate.id === budget.id);
  const settledOfJournal = entries.reduce((sum, e) => sum + big(e.data.amountMinor as string), 0n);
  if (settledOfJournal !== big(budget.settledMinor)) out.push(`budget ${budget.id}: settled ${budget.settledMinor}, but its journal's settle entries add to ${settledOfJournal}`);
  const allEntries = snapshot.events.filter((e) => (e.type === 'budget.settled' || e.type === 'budget.voided') && e.aggregate.id === budget.id);
  for (const [workKey, twice] of groupBy(allEntries, (e) => e.data.workKey as string)) {
    if (twice.length > 1) out.push(`budget ${budget.id}: workKey ${workKey} applied ${twice.length} times`);
  }
  out.push(...acknowledged(history, snapshot, new Map(allEntries.map((e) => [e.data.workKey as string, e]))));
  return out;
}

function acknowledged(history: History, snapshot: Snapshot, entryOf: Map<string, any>): string[] {
  const out: string[] = [];
  for (const call of callsOf(history.calls, 'POST /budgets/:id/settle', 'POST /budgets/:id/void')) {
    if (call.status !== 200 && call.status !== 201) continue;
    const entry = entryOf.get(call.body.workKey);
    if (!entry) out.push(`${call.path.includes('settle') ? 'settle' : 'void'} of workKey ${call.body.workKey} was acknowledged to ${call.proc} but is not in the journal`);
    else if (entry.data.entryId !== call.reply.entry.id) out.push(`workKey ${call.body.workKey}: acknowledged as entry ${call.reply.entry.id}, the journal has ${entry.data.entryId}`);
  }
  const reservationIds = new Set(snapshot.reservations.map((r) => r.id));
  for (const call of callsOf(history.calls, 'POST /budgets/:id/reserve')) {
    if ((call.status === 200 || call.status === 201) && !reservationIds.has(call.reply.id)) out.push(`reservation ${call.reply.id} was acknowledged to ${call.proc} but is not in the store`);
  }
  return out;
}
