import type { FillResult } from './fill';
import type { LoggedPlan } from './cluster';
import type { PhaseResult, RequestKind, Sizes } from './phases';

/** The growth bench's levels, settings and results: shared by the run (growth.ts) and its report. */

export type LevelKind = 'empty' | 'mailbox' | 'space' | 'finished';

export interface Level {
  name: string;
  kind: LevelKind;
  /** Tasks the fill makes. */
  tasks: number;
  description: string;
}

export interface Config {
  quick: boolean;
  levels: Level[];
  explainLevels: string[];
  sizes: Sizes;
  port: number;
  reportPath: string;
}

export interface LevelResult {
  level: Level;
  fill?: FillResult;
  settleSeconds: number;
  validations: string[];
  phases: PhaseResult[];
  /** The machine's 1-minute load average after the phases: other work on it shows in the latencies, not in the buffers. */
  loadAverage?: number;
  /** Explain pass: per request kind, the last plan of each distinct statement. */
  plans?: Partial<Record<RequestKind, LoggedPlan[]>>;
}
