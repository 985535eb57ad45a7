import { createHash } from 'node:crypto';
import { assert } from '../assert';
import { canonicalJson } from '../canonical-json';
import { maxAttempts } from '../messages/model';
import { isTerminalTask, maxPoolRequirements, maxQuotaRequirements, type Task, type TaskMove, type TaskRequirements } from './model';

/** docs/design/0008-tasks-and-deliveries.md: SHA-256 over canonical JSON of mailboxId, input, requirements and workLimit. */
export function taskFingerprint(mailboxId: string, input: unknown, requirements: TaskRequirements, workLimit: string | null): string {
  return createHash('sha256').update(canonicalJson({ mailboxId, input, requirements, workLimit }), 'utf8').digest('hex');
}

/** The invariants of a stored task; every write in both stores checks them. */
export function assertTask(t: Task): void {
  assert(Number.isSafeInteger(t.attempts) && t.attempts >= 0 && t.attempts <= maxAttempts, `task ${t.id}: attempts ${t.attempts}`);
  assert(t.requirements.pools.length <= maxPoolRequirements && t.requirements.quotas.length <= maxQuotaRequirements, `task ${t.id}: too many requirements`);
  if (t.state === 'SUCCEEDED') assert(t.failureReason === null, `task ${t.id}: SUCCEEDED with a failureReason`);
  if (!isTerminalTask(t.state)) assert(t.failureReason === null && t.outcome === null, `task ${t.id}: ${t.state} with an outcome or failureReason`);
  if (t.tombstoned) assert(isTerminalTask(t.state) && t.input === null && t.outcome === null, `task ${t.id}: tombstoned while ${t.state} or with input or outcome`);
}

/**
 * The one rule of a task that moves with its delivery (a claim, a complete, a failed attempt):
 * a PENDING or RUNNING task takes the move; an ended task (cancelled, expired, or decided by
 * its group while its delivery was out) stays as it is: undefined. Core applies it to a task
 * read under its delivery's lock (tasks/service.ts); the memory store's claims apply it as they
 * claim, and the SQL store's claim statements say it in their `moved` step.
 */
export function movedWithDelivery(task: Task, move: TaskMove): Task | undefined {
  if (isTerminalTask(task.state)) return undefined;
  const next: Task = { ...task, ...move };
  assertTask(next);
  return next;
}

/** What a claim of attempt `attempt` moves its task to: RUNNING, counting the attempt. */
export const claimMove = (attempt: number, nowMs: number): TaskMove => ({ state: 'RUNNING', attempts: attempt, outcome: null, failureReason: null, updatedAt: nowMs });
