import type { TimerView } from '../schemas/timers';
import { isoFromMs } from '../time';
import type { Timer } from './model';

const isoOrNull = (ms: number | null): string | null => (ms === null ? null : isoFromMs(ms));

/** The timer as clients see it. dueAt and the fingerprint are the sweep's and the arm's bookkeeping, not shown. */
export function timerView(t: Timer): TimerView {
  return {
    id: t.id,
    timerKey: t.timerKey,
    scopeId: t.scopeId,
    mailboxId: t.mailboxId,
    payload: t.payload,
    fireAt: isoFromMs(t.fireAt),
    state: t.state,
    firedAt: isoOrNull(t.firedAt),
    firedMessageId: t.firedMessageId,
    cancelledAt: isoOrNull(t.cancelledAt),
    createdAt: isoFromMs(t.createdAt),
    updatedAt: isoFromMs(t.updatedAt),
  };
}
