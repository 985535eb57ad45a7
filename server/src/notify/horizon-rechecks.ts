/**
 * Re-reads after a wake that found nothing new, in real milliseconds, for long polls over the
 * journal on PostgreSQL. A commit's notification can arrive before its event passes the
 * journal's horizon (docs/event-journal.md, "Long polls must re-check"); the horizon moves in
 * real time, whatever the server's clock, usually within a millisecond or two, so the first
 * re-reads come quickly. It can also stay behind for seconds while another transaction on the
 * database server is open (a CI run saw it), so once woken the poll keeps re-reading every
 * second (the last delay, repeated) until a read is done or the wait ends. A poll never woken
 * re-reads nothing: it parks on its topics alone, and an event committed just before it began
 * but still held back shows at the next wake or when the wait ends (docs/event-journal.md,
 * "The caveat").
 */
export const horizonRecheckDelaysMs: readonly number[] = [5, 10, 20, 40, 80, 160, 320, 640, 1_000];

/** Where one long poll stands in horizonRecheckDelaysMs. */
export class HorizonRechecks {
  /** Index of the next delay; past the end: none pending, wait for a topic. */
  private next = horizonRecheckDelaysMs.length;
  private woken = false;

  /** The delay before the next re-read, or undefined to wait for a topic alone. */
  delayMs(): number | undefined {
    return horizonRecheckDelaysMs[this.next];
  }

  /** A topic woke the poll: re-read quickly from the start of the schedule. */
  notified(): void {
    this.woken = true;
    this.next = 0;
  }

  /** A re-read's delay passed: the next one, then every second while a woken-for event may still be held back. */
  rechecked(): void {
    this.next++;
    if (this.next === horizonRecheckDelaysMs.length && this.woken) this.next = horizonRecheckDelaysMs.length - 1;
  }
}
