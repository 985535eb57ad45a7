import type { TaskLedger, TaskWorld } from '../checks/tasks';

/** What a submit of one taskKey sends: drawn from the key alone, so every repeat of a key joins (same fingerprint). */
export interface TaskSpec {
  mailboxId: string;
  input: { n: number };
  requirements: { pools: { name: string; units: number }[]; quotas: { name: string; units: number }[]; budgets: { name: string; reserveMinor: string }[] };
  workLimit?: string;
}

/**
 * What the task agents share, and all they see of the task workload (task-workload.ts), which
 * makes them: the world set up for tasks, the ledger they record in, the run's scope, and what
 * each taskKey submits. Kept apart so the agents do not import the workload that constructs them.
 */
export interface TaskFixture {
  readonly ledger: TaskLedger;
  readonly world: TaskWorld;
  readonly scopeId: string;
  specOf(taskKey: string): TaskSpec;
  budgetIdOf(name: string): string;
}
