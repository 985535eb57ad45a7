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
] as const;
export type PlantedBug = (typeof plantableBugs)[number];

export const plantedBugs = new Set<PlantedBug>();
