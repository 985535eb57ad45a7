/**
 * Known bugs that the simulator's own tests plant, one at a time, to show that its checkers
 * catch them (a checker never shown to fail proves nothing). Empty in every real process:
 * only sim/src/planted-bugs.test.ts adds to it.
 */
export const plantableBugs = [
  /** settle moves funds to settled but forgets to take them from reserved (and skips the assert). */
  'settle-skips-reserved-update',
  /** settle ignores a repeated workKey and applies the entry again. */
  'settle-ignores-work-key',
  /** the idempotency layer never finds the stored reply, so a retried request applies twice. */
  'idempotency-applies-twice',
  /** the journal reader drops the second event of every page. */
  'journal-drops-event',
  /** serving an allowance's line skips a head that does not fit and grants those behind it. */
  'allowance-skips-blocked-head',
  /** arrive counts an arrivalKey again that was already counted in the epoch (barriers). */
  'barrier-counts-repeat-arrival',
  /** recv also claims a CLAIMED message whose lease is still live: two live leases, double delivery (memory store). */
  'message-claims-leased',
  /** the end of an admitted claim by nack, lease expiry or cancel forgets to give its pool units back (admission). */
  'admission-keeps-pool-units',
  /** a task group evaluates its rule again after it has decided, so a later verdict or member end decides it a second time (task groups). */
  'group-decides-twice',
  /** a batch route (docs/design/0015-batches.md) retried with its Idempotency-Key runs its items again instead of replaying its reply. */
  'batch-replay-reapplies',
  /** GET /watch passes over the first event each read examines, moving its cursor past it unseen. */
  'watch-skips-event',
  /** GET /watch ignores the `aggregate` filter, answering events of every aggregate. */
  'watch-ignores-aggregate',
  /** the webhook dispatcher moves a destination's cursor past every fourth event it reads without delivering it. */
  'webhook-skips-event',
  /** a claim batch (admit-batch, recv-batch) is checked as one lease and hands out maxTasks or maxMessages whatever room the plan's agents at once leaves (server/src/limits). */
  'batch-claims-past-agents-at-once',
  /** recovery calls are held to 80 % of a rate limit like every other call: the reserve is gone (server/src/limits). */
  'recovery-reserve-ignored',
  /** Free's monthly operations never stop new work (server/src/limits). */
  'operations-stop-ignored',
  /** the retention sweep takes every window as zero: finished tasks are tombstoned and the journal purged at once. */
  'retention-ignores-window',
  /** an acquire reuses the key's last fencing token instead of advancing it (claims; the memory store's unique-fencing guard steps aside). */
  'claim-fencing-reused',
  /** an acquire does not see the key's live holder and takes the key anyway: two HELD claims of one key (claims; the memory store's one-HELD guard steps aside). */
  'claim-ignores-held',
  /** the timer sweep fires a timer a second time right after firing it, under a fresh workKey (`timer:<id>:again`), with a second timer.fired. */
  'timer-fires-twice',
  /** a cancelled run's cascade forgets its PENDING and RUNNING tasks (runs). */
  'run-cancel-skips-tasks',
  /** a COMPLETED or CANCELLED run takes new work under its scopeId as if it were ACTIVE (runs). */
  'ended-run-takes-work',
] as const;

/**
 * Bugs only transactions running side by side can show: the simulator's store runs them one at
 * a time, so tests on PostgreSQL plant these (test/group-races.pg.test.ts).
 */
export const concurrencyBugs = [
  /** a task group is read without its row lock, so racing transactions each decide it. */
  'group-skips-lock',
  /** the run governing a scope is read without its share lock, so work created as the run is cancelled outlives the cascade. */
  'run-guard-skips-lock',
] as const;

/**
 * Bugs of the real stack that the torture run plants in its server processes
 * (torture/planted-server.ts), to show its history checker catches them (docs/reliability.md).
 */
export const processBugs = [
  /** complete, nack and renew check the token but not the lease's end: a worker whose lease ran out still completes until the sweep takes the delivery back. */
  'lease-expiry-ignored',
  /** an operation's reply goes out before its transaction commits (which then waits 300 ms): a server killed in between loses what it acknowledged. */
  'ack-before-commit',
] as const;
export type PlantedBug = (typeof plantableBugs)[number];
export type ConcurrencyBug = (typeof concurrencyBugs)[number];
export type ProcessBug = (typeof processBugs)[number];

export const plantedBugs = new Set<PlantedBug | ConcurrencyBug | ProcessBug>();
