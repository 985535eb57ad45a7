import { assert, type LeaseRoom } from '@baton/core';

/**
 * The leases one claim try holds on this server (docs/design/0016-limits-and-retry-after.md, agents at once, counted item by
 * item). It starts with the deliveries the try may claim set aside; admission takes from it what
 * a candidate would hand out (itself and its pool units, LeaseRoom), from what is set aside first,
 * then from what the organization has left, which it then sets aside too. What a try sets aside
 * counts against every other try of its organization on this server until the try ends, by when
 * what it handed out is in the ledger's load: two batches at once cannot both take the last leases.
 */
export class LeaseHold implements LeaseRoom {
  /** Leases set aside for this try (in the ledger's held count). */
  private held: number;
  /** Of those, what the transaction run under way has taken. */
  private used = 0;
  private released = false;

  /**
   * `deliveries`: how many the try may claim, already set aside. `elsewhere`: the leases the
   * organization has left beyond every try's. `setAside`: adds to (or, negative, takes from) what
   * this server's tries hold.
   */
  constructor(
    readonly deliveries: number,
    private readonly elsewhere: () => number,
    private readonly setAside: (leases: number) => void,
  ) {
    assert(Number.isInteger(deliveries) && deliveries >= 1, `a lease hold of ${deliveries} deliveries`);
    this.held = deliveries;
  }

  left(): number {
    return this.held - this.used + this.elsewhere();
  }

  take(n: number): boolean {
    assert(Number.isInteger(n) && n >= 0 && !this.released, `take ${n} leases from a ${this.released ? 'released' : 'live'} hold`);
    if (n > this.left()) return false;
    const more = Math.max(0, n - (this.held - this.used));
    this.setAside(more);
    this.held += more;
    this.used += n;
    return true;
  }

  giveBack(n: number): void {
    assert(Number.isInteger(n) && n >= 0 && n <= this.used, `give back ${n} of ${this.used} leases taken`);
    this.used -= n;
  }

  /** A transaction run again starts afresh: nothing the last run took was claimed. */
  restart(): void {
    this.used = 0;
  }

  /** Ends the hold, once what the try handed out is recorded (or it failed). Safe to call twice. */
  release(): void {
    if (this.released) return;
    this.setAside(-this.held);
    this.released = true;
  }
}
