import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock/manual-clock';
import { LocalNotifier } from './notifier';
import { MemoryStore } from './store/memory/memory-store';
import { NotifyingStore } from './store/notifying-store';

describe('LocalNotifier', () => {
  it('wakes a wait on notify, on timeout, or on abort', async () => {
    const clock = new ManualClock(0);
    const notifier = new LocalNotifier(clock);
    let woke = false;
    const waiting = notifier.wait('barrier:1', 10_000).then(() => (woke = true));
    notifier.notify('barrier:2');
    await Promise.resolve();
    expect(woke).toBe(false);
    notifier.notify('barrier:1');
    await waiting;
    expect(notifier.parked).toBe(0);

    const timedOut = notifier.wait('x', 500);
    clock.advance(500);
    await timedOut;
    const controller = new AbortController();
    const aborted = notifier.wait('y', 500, controller.signal);
    controller.abort();
    await aborted;
    expect(clock.nextTimerMs()).toBeUndefined();
  });

  it('is notified by the commit of a transaction that appended an event for the aggregate', async () => {
    const clock = new ManualClock(0);
    const notifier = new LocalNotifier(clock);
    const store = new NotifyingStore(new MemoryStore(), notifier);
    let woke = false;
    const waiting = notifier.wait('budget:b1', 60_000).then(() => (woke = true));
    await store.transaction(async (tx) => {
      await tx.events.append('s', 0, [{ type: 'budget.created', aggregateType: 'budget', aggregateId: 'b1', scopeId: null, data: {} }]);
      expect(woke).toBe(false); // not before the commit
    });
    await waiting;
    expect(woke).toBe(true);
  });

  it('does not notify when the transaction rolls back', async () => {
    const notifier = new LocalNotifier(new ManualClock(0));
    const store = new NotifyingStore(new MemoryStore(), notifier);
    const waiting = notifier.wait('budget:b1', 60_000);
    await expect(
      store.transaction(async (tx) => {
        await tx.events.append('s', 0, [{ type: 'budget.created', aggregateType: 'budget', aggregateId: 'b1', scopeId: null, data: {} }]);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(notifier.parked).toBe(1);
    notifier.notify('budget:b1');
    await waiting;
  });
});
