export interface LockOptions {
  /** Hold a row lock until the transaction ends (SELECT ... FOR UPDATE). */
  forUpdate?: boolean;
  /**
   * With forUpdate: do not wait for a lock another transaction holds; fail at once instead
   * (FOR UPDATE NOWAIT). The SQL store then retries the whole transaction (sql-store.ts). For a
   * holder of a group's lock that needs a member's row, which the lock order puts before the
   * group (docs/lock-order.md): waiting there could deadlock.
   */
  noWait?: boolean;
}
