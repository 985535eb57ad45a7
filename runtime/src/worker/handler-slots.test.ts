import { describe, expect, it } from 'vitest';
import { flush } from '../testing/manual-clock';
import { HandlerSlots } from './handler-slots';

describe('HandlerSlots', () => {
  it('refuses a concurrency that is not a positive integer', () => {
    expect(() => new HandlerSlots(0)).toThrow(RangeError);
    expect(() => new HandlerSlots(1.5)).toThrow(RangeError);
  });

  it('lets the waiter through at once while a slot is free, and only when one frees once all are taken', async () => {
    const slots = new HandlerSlots(2);
    const stopped = new AbortController();
    await slots.untilFree(stopped.signal);
    slots.take();
    slots.take();
    expect(slots).toMatchObject({ inUse: 2, free: 0 });

    let woke = false;
    void slots.untilFree(stopped.signal).then(() => (woke = true));
    await flush();
    expect(woke).toBe(false);
    slots.release();
    await flush();
    expect(woke).toBe(true);
    expect(slots).toMatchObject({ inUse: 1, free: 1 });
  });

  it('wakes the waiter when the worker stops, with every slot still taken', async () => {
    const slots = new HandlerSlots(1);
    const stopped = new AbortController();
    slots.take();
    let woke = false;
    void slots.untilFree(stopped.signal).then(() => (woke = true));
    stopped.abort();
    await flush();
    expect(woke).toBe(true);
    expect(slots.free).toBe(0);
  });
});
