/**
 * Counts what a request costs PostgreSQL: statements, and round trips, the ones that wait on
 * the network. A statement starts a new round trip when none of its connection's statements is
 * in flight; one sent while others are (a pipelined write, the COMMIT after it) rides along.
 * test/round-trips.pg.test.ts holds every hot-path request to its budget with these counts.
 */
export class RoundTripMeter {
  roundTrips = 0;
  statements = 0;

  count(newRoundTrip: boolean): void {
    this.statements += 1;
    if (newRoundTrip) this.roundTrips += 1;
  }

  /** A statement on a connection of its own (outside a transaction). */
  alone(): void {
    this.count(true);
  }

  snapshot(): { roundTrips: number; statements: number } {
    return { roundTrips: this.roundTrips, statements: this.statements };
  }
}
