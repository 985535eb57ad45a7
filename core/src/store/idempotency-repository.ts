export interface IdempotencyRecord {
  spaceId: string;
  key: string;
  /** Method, path and canonical body, hashed (docs/design/0005-idempotency-keys.md). */
  fingerprint: string;
  statusCode: number;
  body: unknown;
  createdAt: number;
}

export interface IdempotencyRepository {
  /**
   * Takes the key for this transaction. False while another transaction holds it: the first
   * request is still in flight (IDEMPOTENCY_KEY_IN_FLIGHT).
   */
  tryLock(spaceId: string, key: string): Promise<boolean>;
  get(spaceId: string, key: string): Promise<IdempotencyRecord | undefined>;
  /** Inserts, or replaces a record older than the replay window. */
  put(record: IdempotencyRecord): Promise<void>;
  /**
   * Deletes up to `limit` records of any space created at or before `cutoffMs` (past the replay
   * window: none can be replayed any more) and says how many. Records another transaction holds
   * are skipped, so purges on several servers never wait on each other or on a request.
   */
  purgeUntil(cutoffMs: number, limit: number): Promise<number>;
}
