import { canonicalJson } from '@baton/core';
import type { History } from '../history';
import { callsOf, groupBy, leaseActs, leaseGrants } from './calls';
import type { Snapshot } from './snapshot';

/**
 * Every acknowledged submit exists; every task has at most one outcome, and it is one a worker
 * reported (its handler wrote it down before returning it); a complete the server acknowledged
 * is the task's outcome, so no two completes of one task are both acknowledged.
 */
export function checkTasks(history: History, snapshot: Snapshot): string[] {
  return [...acknowledgedSubmits(history, snapshot), ...outcomes(history, snapshot), ...acknowledgedCompletes(history, snapshot)];
}

function acknowledgedSubmits(history: History, snapshot: Snapshot): string[] {
  const out: string[] = [];
  for (const call of callsOf(history.calls, 'POST /tasks')) {
    if (call.status !== 200 && call.status !== 201) continue;
    if (!snapshot.tasks.has(call.reply.taskId)) out.push(`task ${call.reply.taskId} (taskKey ${call.body.taskKey}) was acknowledged to ${call.proc} (${call.status}) but is not in the store`);
  }
  return out;
}

function outcomes(history: History, snapshot: Snapshot): string[] {
  const reported = new Map<string, Set<string>>();
  for (const note of history.notes) {
    if (note.what !== 'outcome') continue;
    const taskId = note.data.taskId as string;
    if (!reported.has(taskId)) reported.set(taskId, new Set());
    reported.get(taskId)!.add(canonicalJson(note.data.outcome));
  }
  const out: string[] = [];
  for (const task of snapshot.tasks.values()) {
    if (task.state !== 'SUCCEEDED') continue;
    if (!reported.get(task.id)?.has(canonicalJson(task.outcome))) out.push(`task ${task.id} SUCCEEDED with outcome ${canonicalJson(task.outcome)}, which no worker reported`);
  }
  const terminal = new Set(['task.succeeded', 'task.failed', 'task.cancelled', 'task.expired']);
  for (const [taskId, events] of groupBy(snapshot.events.filter((e) => terminal.has(e.type)), (e) => e.aggregate.id)) {
    if (events.length > 1) out.push(`task ${taskId} ended ${events.length} times in the journal: ${events.map((e) => e.type).join(', ')}`);
  }
  return out;
}

function acknowledgedCompletes(history: History, snapshot: Snapshot): string[] {
  const taskOf = new Map(leaseGrants(history.calls).map((g) => [g.messageId, g.taskId]));
  const out: string[] = [];
  const acked = leaseActs(history.calls).filter((a) => a.kind === 'complete' && a.status === 200);
  for (const [messageId, completes] of groupBy(acked, (a) => a.messageId)) {
    const tokens = new Set(completes.map((a) => a.token));
    if (tokens.size > 1) out.push(`message ${messageId}: ${tokens.size} completes with different tokens were acknowledged (${completes.map((a) => a.proc).join(', ')})`);
    const task = snapshot.tasks.get(taskOf.get(messageId) ?? '');
    if (!task) continue;
    const outcome = canonicalJson(task.outcome);
    if (task.state !== 'SUCCEEDED' || !completes.some((a) => canonicalJson(a.payload ?? null) === outcome)) {
      out.push(`task ${task.id}: a complete by ${completes[0]!.proc} was acknowledged, but the task is ${task.state} with outcome ${outcome}`);
    }
  }
  return out;
}
