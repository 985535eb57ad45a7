import type { Faults } from './faults';
import type { Ledger } from './ledger';
import type { Network } from './network';
import type { SimRandom } from './rng';
import type { Scheduler } from './scheduler';
import type { Trace } from './trace';

export type Phase = 'safety' | 'liveness' | 'done';

/** What every agent of a run shares. */
export interface SimContext {
  scheduler: Scheduler;
  rng: SimRandom;
  network: Network;
  ledger: Ledger;
  trace: Trace;
  /** The faults in force now: the run's during safety, none during liveness. */
  faults(): Faults;
  auth(): { spaceId: string; key: string };
  budgetIds: string[];
  allowanceIds: string[];
  /** Each of allowanceIds' unitsLimit: a quota agent sometimes waits for a whole window's units. */
  allowanceUnitsLimits: ReadonlyMap<string, number>;
  /** The run's mailboxes (one or two, made at set-up) and the one scopeId messages are sent and received under. */
  mailboxIds: string[];
  messageScopeId: string;
  phase: Phase;
}
