/**
 * A savepoint inside the transaction. `attempt` runs `work` after it and keeps what work wrote
 * when work answers true; when work answers false or throws, everything work wrote is undone and
 * every row lock it took is released (ROLLBACK TO SAVEPOINT), so a passed-over admission
 * candidate leaves no claim and no lock behind. Only inside Store.transaction.
 */
export interface SavepointRunner {
  attempt(work: () => Promise<boolean>): Promise<boolean>;
}
