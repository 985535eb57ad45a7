/** Allowance state as stored. Times are epoch ms from the injected clock. */
export interface Allowance {
  id: string;
  spaceId: string;
  name: string;
  unitsLimit: number;
  windowSeconds: number;
  /** Start of the window `usedUnits` counts in; windows are aligned to createdAt. */
  windowStartsAt: number;
  usedUnits: number;
  cooldownUntil: number | null;
  cooldownReason: string | null;
  /** Position the next waiter takes in the FIFO line. */
  nextPosition: number;
  /**
   * When time alone could next change something (window roll, cooldown end, a waiter's expiry)
   * while waiters are queued; null when nobody waits. The grant sweep claims allowances by it.
   */
  wakeAt: number | null;
  createdAt: number;
  updatedAt: number;
}

export const waiterStates = ['WAITING', 'GRANTED', 'CANCELLED', 'EXPIRED'] as const;
export type WaiterState = (typeof waiterStates)[number];

export interface AllowanceWaiter {
  id: string;
  spaceId: string;
  allowanceId: string;
  /** Place in the line: strictly increasing per allowance, so FIFO is by position. */
  position: number;
  scopeId: string;
  holder: string;
  units: number;
  state: WaiterState;
  grantedAt: number | null;
  expiresAt: number;
  createdAt: number;
  updatedAt: number;
}

/**
 * One allowance's wait line as a metrics census sees it (AllowanceWaiterRepository.censusLines):
 * for operators, across spaces; never read by an operation.
 */
export interface WaitLineCensus {
  spaceId: string;
  allowanceId: string;
  allowanceName: string;
  /** WAITING waiters in the line. */
  waiting: number;
  /** createdAt of the line's oldest WAITING waiter (epoch ms, injected clock). */
  oldestWaitingAt: number;
}

export interface Consumption {
  id: string;
  spaceId: string;
  allowanceId: string;
  scopeId: string;
  holder: string;
  units: number;
  workKey: string | null;
  windowStartsAt: number;
  createdAt: number;
}
