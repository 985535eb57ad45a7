/** Tasks as stored (docs/design/0008-tasks-and-deliveries.md). Times are epoch ms from the injected clock. */
export const taskStates = ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'EXPIRED'] as const;
export type TaskState = (typeof taskStates)[number];

export const terminalTaskStates: readonly TaskState[] = ['SUCCEEDED', 'FAILED', 'CANCELLED', 'EXPIRED'];
export const isTerminalTask = (state: TaskState): boolean => terminalTaskStates.includes(state);

/** Requirements per task (docs/api.md "Fixed bounds"): at most 4 pools and 4 quotas. */
export const maxPoolRequirements = 4;
export const maxQuotaRequirements = 4;

export interface TaskRequirements {
  pools: { name: string; units: number }[];
  quotas: { name: string; units: number }[];
  budgets: { name: string; reserveMinor: string }[];
}

export interface Task {
  id: string;
  spaceId: string;
  taskKey: string;
  /** SHA-256 over canonical JSON of mailboxId, input, requirements and workLimit. */
  fingerprint: string;
  mailboxId: string;
  scopeId: string;
  state: TaskState;
  input: unknown;
  requirements: TaskRequirements;
  workLimit: string | null;
  deadline: number | null;
  /** Claims of the task's delivery so far. */
  attempts: number;
  outcome: unknown;
  failureReason: string | null;
  /** The task's delivery: a message in its mailbox carrying the taskId (set in the submit transaction). */
  messageId: string | null;
  /** The task group the task is a member of (at most one); null when none. */
  groupId: string | null;
  /**
   * Past its organization's retention window after finishing (docs/design/0017-retention.md): input and outcome
   * are cleared (null), state and failureReason stay. Set only by the retention sweep.
   */
  tombstoned: boolean;
  createdAt: number;
  updatedAt: number;
}

/** What a delivery's move writes onto its live task; a live task has no outcome or failureReason before. */
export interface TaskMove {
  state: TaskState;
  attempts: number;
  outcome: unknown;
  failureReason: string | null;
  updatedAt: number;
}

export interface TaskSubscriber {
  spaceId: string;
  taskId: string;
  subscriberId: string;
  scopeId: string;
  joinedAt: number;
}

/** Position in the task list, which is ordered by (createdAt, id). */
export interface TaskListPosition {
  createdAt: number;
  id: string;
}
