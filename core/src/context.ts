import type { Random } from './random';
import type { Tx } from './store/store';
import type { SpaceLimits } from './tenancy/model';

/** What a core operation runs with: its transaction, its tenant, the time and an id source. */
export interface OpContext {
  tx: Tx;
  spaceId: string;
  /** The injected clock's reading when the operation began. */
  nowMs: number;
  random: Random;
  /** The space's limits in force (GET /limits), read with the request's credentials. */
  limits: SpaceLimits;
}
