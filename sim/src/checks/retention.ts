import type { Store, Task } from '@baton/core';

const dayMs = 24 * 60 * 60 * 1000;
/** The shortest plan window (Free, 7 days) and the journal's floor (30 days), docs/design/0017-retention.md. */
const shortestTaskWindowMs = 7 * dayMs;
const journalFloorMs = 30 * dayMs;

/**
 * Retention never removes anything younger than its window: no task finished within the
 * shortest plan window is tombstoned, and no journal is purged while its first event is younger
 * than the journal's 30-day floor. A run lasts minutes of simulated time, so in a correct run the
 * sweep, which runs on every tick, finds nothing to do; a sweep that ignores its windows is caught.
 */
export async function checkRetention(store: Store, spaceIds: readonly string[], runStartMs: number, nowMs: number): Promise<string[]> {
  const violations: string[] = [];
  for (const spaceId of spaceIds) {
    for (const task of await allTasks(store, spaceId)) {
      if (task.tombstoned && task.updatedAt > nowMs - shortestTaskWindowMs) {
        violations.push(`retention: task ${task.id} (${task.state}, finished ${nowMs - task.updatedAt} ms ago) was tombstoned inside the ${shortestTaskWindowMs / dayMs}-day window`);
      }
    }
    const purgedThrough = await store.read((tx) => tx.events.purgedThrough(spaceId));
    if (purgedThrough !== '0' && runStartMs > nowMs - journalFloorMs) {
      violations.push(`retention: space ${spaceId}'s journal was purged through ${purgedThrough} though every event is younger than ${journalFloorMs / dayMs} days`);
    }
  }
  return violations;
}

async function allTasks(store: Store, spaceId: string): Promise<Task[]> {
  const all: Task[] = [];
  for (;;) {
    const last = all.at(-1);
    const page = await store.read((tx) => tx.tasks.list(spaceId, null, null, last ? { createdAt: last.createdAt, id: last.id } : null, 500));
    all.push(...page);
    if (page.length < 500) return all;
  }
}
