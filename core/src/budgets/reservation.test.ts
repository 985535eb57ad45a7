import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../random';
import { newReservation, reservedEvent } from './reservation';

const terms = { spaceId: 's', budgetId: 'b', scopeId: 'x', holder: 'h', amountMinor: 250n, settleBy: null };

describe('a new reservation', () => {
  it('starts ACTIVE with all of its amount remaining, and its event says what POST /reserve and an admission both say', () => {
    const r = newReservation(new SeededRandom(1), 1_000, { ...terms, settleBy: 61_000 });
    expect(r).toEqual({ ...terms, id: r.id, settleBy: 61_000, settledMinor: 0n, remainingMinor: 250n, state: 'ACTIVE', overdueAt: null, createdAt: 1_000, updatedAt: 1_000 });
    expect(reservedEvent(r)).toEqual({
      type: 'budget.reserved', aggregateType: 'budget', aggregateId: 'b', scopeId: 'x',
      data: { reservationId: r.id, holder: 'h', amountMinor: '250', settleBy: '1970-01-01T00:01:01.000Z' },
    });
  });

  it('an admission\'s has no settleBy and names its delivery; what the event says of the reservation wins over `about`', () => {
    const r = newReservation(new SeededRandom(2), 5, terms);
    expect(reservedEvent(r, { messageId: 'm', taskId: 't', holder: 'h', holderSession: 'hs', amountMinor: 'stale' }).data).toEqual({
      messageId: 'm', taskId: 't', holder: 'h', holderSession: 'hs', reservationId: r.id, amountMinor: '250', settleBy: null,
    });
  });

  it('draws one id per reservation', () => {
    const random = new SeededRandom(3);
    expect(newReservation(random, 0, terms).id).not.toBe(newReservation(random, 0, terms).id);
  });
});
