import { createHash } from 'node:crypto';
import { assert } from '../assert';
import { canonicalJson } from '../canonical-json';
import { maxAttempts } from '../messages/model';
import { isTerminalTask, maxPoolRequirements, maxQuotaRequirements, type Task, type TaskRequirements } from './model';

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
