import type { History } from '../history';
import { callsOf, groupBy } from './calls';
import type { Snapshot } from './snapshot';

/**
 * Allowances never grant beyond a window: the units of the journal's consumptions in any one
 * window add up to at most the limit, and so do those acknowledged to clients; every
 * acknowledged consumption is in the journal.
 */
export function checkAllowances(history: History, snapshot: Snapshot): string[] {
  const { allowance } = snapshot;
  const out: string[] = [];
  const consumed = snapshot.events.filter((e) => e.type === 'allowance.consumed' && e.aggregate.id === allowance.id);
  for (const [window, events] of groupBy(consumed, (e) => e.data.windowStartsAt as string)) {
    const units = events.reduce((sum, e) => sum + (e.data.units as number), 0);
    if (units > allowance.unitsLimit) out.push(`allowance ${allowance.id}: the window from ${window} granted ${units} units of ${allowance.unitsLimit}`);
  }
  const inJournal = new Set(consumed.map((e) => e.data.consumptionId as string));
  const acked = callsOf(history.calls, 'POST /allowances/:id/consume').filter((c) => (c.status === 200 || c.status === 201) && c.reply.replay === false);
  const firstAnswers = [...new Map(acked.map((c) => [c.reply.id as string, c])).values()];
  for (const [window, calls] of groupBy(firstAnswers, (c) => c.reply.windowStartsAt as string)) {
    const units = calls.reduce((sum, c) => sum + (c.reply.units as number), 0);
    if (units > allowance.unitsLimit) out.push(`allowance ${allowance.id}: clients were granted ${units} units in the window from ${window}, limit ${allowance.unitsLimit}`);
  }
  for (const call of firstAnswers) if (!inJournal.has(call.reply.id)) out.push(`consumption ${call.reply.id} was acknowledged to ${call.proc} but is not in the journal`);
  return out;
}
