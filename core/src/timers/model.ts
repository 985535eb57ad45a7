/** Timer state as stored. Times are epoch ms. */
export const timerStates = ['ARMED', 'FIRED', 'CANCELLED'] as const;
export type TimerState = (typeof timerStates)[number];

/** The furthest ahead a timer may fire: delaySeconds and fireAt alike (30 days). */
export const maxTimerDelaySeconds = 30 * 24 * 60 * 60;

/** The workKey of the message a timer sends: it makes a second send of one firing a no-op. */
export const timerWorkKey = (timerId: string): string => `timer:${timerId}`;

/**
 * How long a firing waits when the mailbox (or the space) has no room for its message: the
 * timer stays ARMED and the sweep takes it again after this long (BACKLOG_FULL's Retry-After).
 */
export const timerRetryDelayMs = 1_000;

export interface Timer {
  id: string;
  spaceId: string;
  /** 1 to 512 characters, unique in the space: a second arm of the key is create-or-get. */
  timerKey: string;
  scopeId: string;
  mailboxId: string;
  /** Sent as the message's payload when the timer fires. */
  payload: unknown;
  /** When the timer is due, as the arm asked (now + delaySeconds when it asked a delay). */
  fireAt: number;
  /**
   * When the sweep next takes the timer: fireAt, pushed back by timerRetryDelayMs each time its
   * mailbox had no room. The sweep's order (oldest first) is on this.
   */
  dueAt: number;
  /** SHA-256 of the arm body as asked (timerFingerprint): a repeat of the key must match it. */
  fingerprint: string;
  state: TimerState;
  /** Set exactly when FIRED: when it fired, and the message it sent. */
  firedAt: number | null;
  firedMessageId: string | null;
  /** Set exactly when CANCELLED. */
  cancelledAt: number | null;
  createdAt: number;
  updatedAt: number;
}

/** Position in the timer list, which is ordered by (createdAt, id). */
export interface TimerListPosition {
  createdAt: number;
  id: string;
}

/** What the timer list filters on; null: no filter. */
export interface TimerFilter {
  states: readonly TimerState[] | null;
  scopeId: string | null;
}
