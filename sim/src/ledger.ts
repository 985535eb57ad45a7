/**
 * What clients were told, recorded as they hear it, and the checks that need only that:
 * one Idempotency-Key or workKey never yields two different effects, and a reservation, once
 * seen closed, never shows another closed state. The final checks (checker.ts) compare this
 * against the store.
 */
export interface ReserveRecord {
  agent: string;
  session: string;
  budgetId: string;
  scopeId: string;
  amountMinor: bigint;
  reservationId?: string;
}

export interface EntryRecord {
  agent: string;
  session: string;
  kind: 'SETTLE' | 'VOID';
  reservationId: string;
  /** Requested for a settle; for a void, learned from its reply. */
  amountMinor?: bigint;
  entryId?: string;
}

export class Ledger {
  readonly reserves = new Map<string, ReserveRecord>();
  /** By `${budgetId} ${workKey}`: workKeys are unique per budget. */
  readonly entries = new Map<string, EntryRecord>();
  readonly closedStates = new Map<string, string>();
  /** Agent sessions that ended in a crash: their unacknowledged requests may or may not have applied. */
  readonly crashedSessions = new Set<string>();
  readonly violations: string[] = [];

  violation(message: string): void {
    if (this.violations.length < 50) this.violations.push(message);
  }

  requestReserve(idempotencyKey: string, record: ReserveRecord): void {
    if (!this.reserves.has(idempotencyKey)) this.reserves.set(idempotencyKey, record);
  }

  ackReserve(idempotencyKey: string, reservationId: string): void {
    const record = this.reserves.get(idempotencyKey)!;
    if (record.reservationId !== undefined && record.reservationId !== reservationId) {
      this.violation(`Idempotency-Key ${idempotencyKey} applied twice: reservations ${record.reservationId} and ${reservationId}`);
    }
    record.reservationId = reservationId;
  }

  requestEntry(budgetId: string, workKey: string, record: EntryRecord): void {
    const key = `${budgetId} ${workKey}`;
    if (!this.entries.has(key)) this.entries.set(key, record);
  }

  ackEntry(budgetId: string, workKey: string, entryId: string, replay: boolean, amountMinor: bigint): void {
    const record = this.entries.get(`${budgetId} ${workKey}`)!;
    if (record.entryId !== undefined && (record.entryId !== entryId || !replay)) {
      this.violation(`workKey ${workKey} applied twice: entries ${record.entryId} and ${entryId} (replay ${replay})`);
    }
    record.entryId ??= entryId;
    record.amountMinor ??= amountMinor;
  }

  observeState(reservationId: string, state: string): void {
    if (state === 'ACTIVE') return;
    const seen = this.closedStates.get(reservationId);
    if (seen !== undefined && seen !== state) this.violation(`reservation ${reservationId} seen both ${seen} and ${state}`);
    this.closedStates.set(reservationId, state);
  }
}
