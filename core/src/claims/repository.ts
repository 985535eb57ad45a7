import type { LockOptions } from '../store/lock-options';
import type { SpaceCutoff } from '../store/retention-repository';
import type { Claim, ClaimFilter, ClaimKeyRow, ClaimListPosition } from './model';

/**
 * Claims and their keys' fencing sequences. Lock order (docs/lock-order.md): the key row first
 * (lockKey), then a claim row; renew, release and the expiry sweep lock only the claim row, so
 * nothing ever waits for a key row while holding a claim row.
 */
export interface ClaimRepository {
  /**
   * The key's row, created (lastFencingToken 0) when the key was never claimed, and locked until
   * the transaction ends: concurrent acquires of one key run one after another. One statement in
   * SQL (INSERT ... ON CONFLICT DO UPDATE ... RETURNING), which waits for a concurrent holder of
   * the row and then answers its latest committed version.
   */
  lockKey(spaceId: string, claimKey: string, nowMs: number): Promise<ClaimKeyRow>;
  /**
   * Writes the key's new lastFencingToken. It must be greater than the stored one: in SQL the
   * statement fails (baton_assert) otherwise, so a fencing token can never go back or repeat.
   */
  advanceKey(key: ClaimKeyRow): Promise<void>;
  /**
   * The key's HELD claim (at most one: a unique index says so), whether or not its lease ran
   * out. With forUpdate it is locked, and read after any change committed before the lock.
   */
  getHeld(spaceId: string, claimKey: string, options?: LockOptions): Promise<Claim | undefined>;
  insert(claim: Claim): Promise<void>;
  get(spaceId: string, id: string, options?: LockOptions): Promise<Claim | undefined>;
  update(claim: Claim): Promise<void>;
  /** Claims in (createdAt, id) order after `after` (exclusive), matching `filter`. */
  list(spaceId: string, filter: ClaimFilter, after: ClaimListPosition | null, limit: number): Promise<Claim[]>;
  /**
   * HELD claims of any space whose lease ran out at or before `nowMs`, locked for this
   * transaction, earliest expiry first. Rows another transaction holds (an acquire replacing
   * the claim, a renew, another server's sweep) are skipped (SKIP LOCKED).
   */
  claimExpired(nowMs: number, limit: number): Promise<Claim[]>;
  /**
   * Live claims (HELD with a lease running past `nowMs`) of each of `spaceIds`; a space with
   * none is absent from the map. For the concurrency limit, which counts them as leases.
   */
  countLive(spaceIds: readonly string[], nowMs: number): Promise<Map<string, number>>;
  /**
   * Retention: deletes RELEASED and EXPIRED claims that ended at or before their space's cutoff,
   * at most `limit`, skipping rows others hold. The key rows stay, so a key's fencing tokens keep
   * growing after its claims are gone.
   */
  purgeEnded(cutoffs: readonly SpaceCutoff[], limit: number): Promise<number>;
}
