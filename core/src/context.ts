import type { Random } from './random';
import type { Tx } from './store/store';

/** What a core operation runs with: its transaction, its tenant, the time and an id source. */
export interface OpContext {
  tx: Tx;
  spaceId: string;
  /** The injected clock's reading when the operation began. */
  nowMs: number;
  random: Random;
}
