import { describe, expect, it } from 'vitest';
import { LeaseKeeper, type LeaseLostCause, type RenewAnswer } from './lease-keeper';
import { ManualClock } from './testing/manual-clock';

const iso = (ms: number): string => new Date(ms).toISOString();

/** A keeper of a 30 s lease granted now, whose renews answer with `answer` after `replyAfterMs`. */
function setup(answer: (clock: ManualClock) => RenewAnswer, replyAfterMs = 0) {
  const clock = new ManualClock();
  const startMs = clock.now();
  const renewsAtMs: number[] = [];
  const renewed: string[] = [];
  const failures: number[] = [];
  const lost: LeaseLostCause[] = [];
  const keeper = new LeaseKeeper(
    {
      clock,
      leaseSeconds: 30,
      renew: async (signal) => {
        renewsAtMs.push(clock.now() - startMs);
        await clock.sleep(replyAfterMs, signal).catch(() => undefined);
        return answer(clock);
      },
      onRenewed: (leaseExpiresAt) => renewed.push(leaseExpiresAt),
      onRenewFailed: (_error, retryInMs) => failures.push(retryInMs),
      onLost: (cause) => lost.push(cause),
    },
    { leaseExpiresAt: iso(startMs + 30_000), countFromMs: startMs },
  );
  const kept = keeper.keep();
  return { clock, startMs, keeper, kept, renewsAtMs, renewed, failures, lost };
}

const granted30s = (clock: ManualClock): RenewAnswer => ({ ok: true, leaseExpiresAt: iso(clock.now() + 30_000) });

describe('LeaseKeeper', () => {
  it('renews a third of the way into each lease it is granted', async () => {
    const { clock, keeper, kept, renewsAtMs, renewed, lost } = setup(granted30s);
    await clock.advance(35_000);
    expect(renewsAtMs).toEqual([10_000, 20_000, 30_000]);
    expect(renewed).toHaveLength(3);
    expect(lost).toEqual([]);
    keeper.stop();
    await kept;
  });

  it('counts each renewed lease from the moment its renew was sent, not from the slow reply', async () => {
    // Each reply takes 4 s; the server's expiry is from the reply, the local count from the send.
    const { clock, keeper, kept, renewsAtMs } = setup(granted30s, 4_000);
    await clock.advance(35_000);
    expect(renewsAtMs).toEqual([10_000, 20_000, 30_000]);
    expect(keeper.beforeDeadline()).toBe(true);
    keeper.stop();
    await kept;
  });

  it('retries a failed renew at a third of the time left, and declares the lease EXPIRED at the local deadline', async () => {
    const { clock, keeper, kept, renewsAtMs, failures, lost } = setup(() => ({ ok: false, leaseLost: false, error: new Error('connection reset') }));
    await clock.advance(29_999);
    expect(lost).toEqual([]);
    expect(keeper.beforeDeadline()).toBe(true);
    // 10 s in: 20 s left, retry in 6.67 s; then a third of what is left each time, never under 250 ms.
    expect(renewsAtMs.slice(0, 3).map(Math.round)).toEqual([10_000, 16_667, 21_111]);
    expect(failures.every((retryInMs) => retryInMs >= 250)).toBe(true);
    await clock.advance(1);
    expect(lost).toEqual(['EXPIRED']);
    expect(keeper.beforeDeadline()).toBe(false);
    await kept;
  });

  it('declares the lease lost at once when the server refuses the token, and renews no more', async () => {
    const { clock, kept, renewsAtMs, lost } = setup(() => ({ ok: false, leaseLost: true, error: { code: 'LEASE_LOST' } }));
    await clock.advance(60_000);
    expect(renewsAtMs).toEqual([10_000]);
    expect(lost).toEqual(['LEASE_LOST']);
    expect(clock.pending).toBe(0);
    await kept;
  });

  it('after stop, sends no renew, ignores the answer of one in flight and never reports a loss', async () => {
    const { clock, keeper, kept, renewsAtMs, renewed, lost } = setup(granted30s, 2_000);
    await clock.advance(11_000); // a renew is in flight
    keeper.stop();
    await kept;
    await clock.advance(60_000);
    expect(renewsAtMs).toEqual([10_000]);
    expect(renewed).toEqual([]);
    expect(lost).toEqual([]);
    expect(clock.pending).toBe(0);
    // The deadline still answers: a complete leaving after the renewals ended asks it.
    expect(keeper.beforeDeadline()).toBe(false);
  });
});
