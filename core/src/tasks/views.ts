import type { TaskView } from '../schemas/tasks';
import { isoFromMs } from '../time';
import type { Task, TaskSubscriber } from './model';

export function taskView(t: Task, subscribers: readonly TaskSubscriber[]): TaskView {
  return {
    id: t.id,
    taskKey: t.taskKey,
    fingerprint: t.fingerprint,
    mailboxId: t.mailboxId,
    scopeId: t.scopeId,
    state: t.state,
    input: t.input,
    requirements: t.requirements,
    workLimit: t.workLimit,
    deadline: t.deadline === null ? null : isoFromMs(t.deadline),
    attempts: t.attempts,
    outcome: t.outcome,
    failureReason: t.failureReason,
    tombstoned: t.tombstoned,
    subscribers: subscribers.map((s) => ({ subscriberId: s.subscriberId, scopeId: s.scopeId, joinedAt: isoFromMs(s.joinedAt) })),
    createdAt: isoFromMs(t.createdAt),
    updatedAt: isoFromMs(t.updatedAt),
  };
}
