import type { History } from '../history';
import { callsOf, groupBy } from './calls';
import type { Snapshot } from './snapshot';

/**
 * Every acknowledged event is in the journal, and no reader following cursors skipped one: the
 * pages each reader process was answered, joined in order, are exactly the journal's first events.
 */
export function checkJournal(history: History, snapshot: Snapshot): string[] {
  return [...ordered(snapshot), ...acknowledgedEvents(history, snapshot), ...readers(history, snapshot)];
}

function ordered(snapshot: Snapshot): string[] {
  for (let i = 1; i < snapshot.events.length; i++) {
    if (BigInt(snapshot.events[i].eventId) <= BigInt(snapshot.events[i - 1].eventId)) return [`the journal is out of order at ${snapshot.events[i].eventId}`];
  }
  return [];
}

function acknowledgedEvents(history: History, snapshot: Snapshot): string[] {
  const seen = new Set(snapshot.events.map((e) => `${e.type} ${e.aggregate.id}`));
  const out: string[] = [];
  for (const call of callsOf(history.calls, 'POST /tasks')) {
    if (call.status === 201 && !seen.has(`task.submitted ${call.reply.taskId}`)) out.push(`task ${call.reply.taskId} was acknowledged as created, but task.submitted is not in the journal`);
  }
  for (const call of callsOf(history.calls, 'POST /claims')) {
    if (call.status === 201 && !seen.has(`claim.acquired ${call.reply.id}`)) out.push(`claim ${call.reply.id} was acknowledged, but claim.acquired is not in the journal`);
  }
  return out;
}

function readers(history: History, snapshot: Snapshot): string[] {
  const out: string[] = [];
  const pages = callsOf(history.calls, 'GET /events').filter((c) => c.status === 200);
  for (const [proc, calls] of groupBy(pages, (c) => c.proc)) {
    const seen = calls.sort((a, b) => a.call - b.call).flatMap((c) => c.reply.items.map((e: any) => e.eventId as string));
    const at = seen.findIndex((id, i) => snapshot.events[i]?.eventId !== id);
    if (at >= 0) out.push(`reader ${proc}: its ${at + 1}th event was ${seen[at]}, the journal's is ${snapshot.events[at]?.eventId ?? 'none'} (skipped, repeated or invented)`);
  }
  return out;
}
