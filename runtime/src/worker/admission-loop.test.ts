import { describe, expect, it } from 'vitest';
import type { Admitted, CallOptions } from '../contract';
import { ManualClock } from '../testing/manual-clock';
import { AdmissionLoop, emptyAdmitPauseMs } from './admission-loop';
import { WorkerStoppedError } from './errors';
import { HandlerSlots } from './handler-slots';

const apiError = (code: string, status: number) => Object.assign(new Error(code), { code, status, requestId: null });
const delivery = (messageId: string) => ({ messageId }) as Admitted;

/**
 * A loop over a scripted admit: each call takes the next step, a list of deliveries (answered
 * after `replyAfterMs`), an error to throw, or 'park' (a long poll that waits until aborted).
 */
function setup(script: (Admitted[] | Error | 'park')[], { concurrency = 1, random = 0, replyAfterMs = 0 } = {}) {
  const clock = new ManualClock();
  const startMs = clock.now();
  const slots = new HandlerSlots(concurrency);
  const calls: { atMs: number; freeSlots: number; options: CallOptions }[] = [];
  const admitted: { messageIds: string[]; receivedAtMs: number }[] = [];
  const failures: { code: string; retryInMs: number }[] = [];
  const fatal: WorkerStoppedError[] = [];
  const loop = new AdmissionLoop({
    admit: async (freeSlots, options) => {
      calls.push({ atMs: clock.now() - startMs, freeSlots, options });
      const step = script.shift() ?? 'park';
      if (step === 'park') {
        await clock.sleep(1e9, options.signal);
        return [];
      }
      if (step instanceof Error) throw step;
      await clock.sleep(replyAfterMs);
      return step;
    },
    slots,
    holderSession: 'session-1',
    backoff: { baseMs: 500, maxMs: 2_000 },
    clock,
    random: { next: () => random },
    onAdmitted: (deliveries, receivedAtMs) => {
      admitted.push({ messageIds: deliveries.map((d) => d.messageId), receivedAtMs: receivedAtMs - startMs });
      for (const _ of deliveries) slots.take();
    },
    onAdmitFailed: (error, retryInMs) => failures.push({ code: (error as { code: string }).code, retryInMs }),
    onFatal: (stopped) => fatal.push(stopped),
  });
  const stopped = new AbortController();
  const running = loop.run(stopped.signal);
  const stop = async (): Promise<void> => {
    stopped.abort();
    await clock.advance(0);
    await running;
  };
  return { clock, slots, calls, admitted, failures, fatal, running, stop };
}

describe('AdmissionLoop', () => {
  it('admits only into free slots, asking for as many deliveries as are free', async () => {
    const { clock, slots, calls, admitted, stop } = setup([[delivery('a'), delivery('b')], [delivery('c')]], { concurrency: 3 });
    await clock.advance(0);
    expect(calls.map((c) => c.freeSlots)).toEqual([3, 1]);
    expect(admitted.map((a) => a.messageIds)).toEqual([['a', 'b'], ['c']]);
    slots.release();
    slots.release();
    await clock.advance(0);
    expect(calls.map((c) => c.freeSlots)).toEqual([3, 1, 2]);
    slots.release();
    await stop();
  });

  it('waits for a slot before admitting again', async () => {
    const { clock, slots, calls, stop } = setup([[delivery('a')], [delivery('b')]]);
    await clock.advance(60_000);
    expect(calls).toHaveLength(1);
    slots.release();
    await clock.advance(0);
    expect(calls).toHaveLength(2);
    slots.release();
    await stop();
  });

  it('hands deliveries over with the moment their reply arrived, and uses a new claim key after each', async () => {
    const { clock, calls, admitted, slots, stop } = setup([[delivery('a')], [delivery('b')]], { replyAfterMs: 3_000 });
    await clock.advance(3_000);
    slots.release();
    await clock.advance(3_000);
    expect(admitted.map((a) => a.receivedAtMs)).toEqual([3_000, 6_000]);
    slots.release();
    await clock.advance(0);
    expect(calls.map((c) => c.options.idempotencyKey)).toEqual(['session-1:claim-1', 'session-1:claim-2', 'session-1:claim-3']);
    await stop();
  });

  it('backs off after failures, doubling up to maxMs with half of each wait jittered', async () => {
    const errors = [apiError('NETWORK', 0), apiError('INTERNAL', 500), apiError('INTERNAL', 500), apiError('INTERNAL', 500)];
    const fixed = setup([...errors], { random: 0 });
    await fixed.clock.advance(10_000);
    expect(fixed.failures.map((f) => f.retryInMs)).toEqual([250, 500, 1_000, 1_000]);
    expect(fixed.calls.map((c) => c.atMs)).toEqual([0, 250, 750, 1_750, 2_750]);
    await fixed.stop();

    const jittered = setup([...errors], { random: 0.5 });
    await jittered.clock.advance(10_000);
    expect(jittered.failures.map((f) => f.retryInMs)).toEqual([375, 750, 1_500, 1_500]);
    await jittered.stop();
  });

  it('keeps the claim key while the failed admit may have claimed (network, 5xx, key in flight), and takes a new one after a refusal', async () => {
    const { clock, calls, stop } = setup([apiError('NETWORK', 0), apiError('UNAVAILABLE', 503), apiError('IDEMPOTENCY_KEY_IN_FLIGHT', 409), apiError('RATE_LIMITED', 429)]);
    await clock.advance(10_000);
    const keys = calls.map((c) => c.options.idempotencyKey);
    expect(new Set(keys.slice(0, 4)).size).toBe(1);
    expect(keys[4]).not.toBe(keys[3]);
    await stop();
  });

  it.each([400, 401, 403, 404])('stops on a %i, which no retry fixes, with a WorkerStoppedError', async (status) => {
    const { clock, calls, fatal, failures, running } = setup([apiError('REFUSED', status)]);
    await clock.advance(60_000);
    await running;
    expect(calls).toHaveLength(1);
    expect(failures).toEqual([]);
    expect(fatal).toHaveLength(1);
    expect(fatal[0]).toBeInstanceOf(WorkerStoppedError);
    expect(fatal[0]).toMatchObject({ status, code: 'REFUSED', cause: { status } });
  });

  it('pauses after an empty answer until emptyAdmitPauseMs after its send', async () => {
    const { clock, calls, stop } = setup([[], []], { replyAfterMs: 400 });
    await clock.advance(2_500);
    expect(calls.map((c) => c.atMs)).toEqual([0, emptyAdmitPauseMs, 2 * emptyAdmitPauseMs]);
    await stop();
  });

  it('ends when stopped, aborting the long poll in flight, and claims nothing after', async () => {
    const { clock, calls, admitted, stop } = setup(['park']);
    await clock.advance(5_000);
    expect(calls).toHaveLength(1);
    await stop();
    expect(calls[0]!.options.signal?.aborted).toBe(true);
    await clock.advance(60_000);
    expect(calls).toHaveLength(1);
    expect(admitted).toEqual([]);
  });
});
