import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { CallOptions, ClaimApi, ClaimGrant, ClaimView } from './contract';
import { BatonApiError } from './errors';
import { ClaimHeldError, ClaimLostError, claimHeldErrorOf, withClaim, type ClaimEvent, type ClaimOptions, type HeldClaim } from './claims';
import { flush, ManualClock } from './testing/manual-clock';

// ---------------------------------------------------------------------------------------------
// Claims as the server keeps them (docs/api.md, Claims), in memory on the manual clock; a test
// can script a renew's or release's answer instead.

type Call = { op: 'acquire' | 'renew' | 'release'; atMs: number; claimId?: string; options?: CallOptions };
type Script = (call: Call) => Promise<ClaimView> | undefined;

const apiError = (code: string, status: number, details?: unknown): BatonApiError =>
  new BatonApiError({ code, status, message: `${code} happened`, requestId: 'req-1', ...(details === undefined ? {} : { details }) });

class FakeClaims implements ClaimApi {
  readonly calls: Call[] = [];
  renewScript: Script | null = null;
  releaseScript: Script | null = null;
  private fencing = 0;
  private readonly claims = new Map<string, ClaimGrant>();

  constructor(private readonly clock: ManualClock) {}

  private live(claimKey: string): ClaimGrant | undefined {
    return [...this.claims.values()].find((c) => c.claimKey === claimKey && c.state === 'HELD' && Date.parse(c.leaseExpiresAt) > this.clock.now());
  }

  private expiresAt(leaseSeconds: number | undefined): string {
    return new Date(this.clock.now() + (leaseSeconds ?? 30) * 1000).toISOString();
  }

  async acquireClaim(body: Parameters<ClaimApi['acquireClaim']>[0], options?: CallOptions): Promise<ClaimGrant> {
    this.calls.push({ op: 'acquire', atMs: this.clock.now(), ...(options ? { options } : {}) });
    const live = this.live(body.claimKey);
    if (live && live.holderSession === body.holderSession) return live;
    if (live) throw apiError('CLAIM_HELD', 409, { holder: live.holder, leaseExpiresAt: live.leaseExpiresAt });
    const at = new Date(this.clock.now()).toISOString();
    const grant: ClaimGrant = {
      id: randomUUID(), claimKey: body.claimKey, scopeId: body.scopeId, holder: body.holder, fencingToken: ++this.fencing, state: 'HELD',
      leaseExpiresAt: this.expiresAt(body.leaseSeconds), endedAt: null, createdAt: at, updatedAt: at, token: randomUUID(), holderSession: body.holderSession,
    };
    this.claims.set(grant.id, grant);
    return grant;
  }

  private liveByToken(claimId: string, token: string): ClaimGrant {
    const claim = this.claims.get(claimId);
    if (!claim || claim.token !== token || claim.state !== 'HELD' || Date.parse(claim.leaseExpiresAt) <= this.clock.now()) throw apiError('LEASE_LOST', 409);
    return claim;
  }

  renewClaim(claimId: string, body: Parameters<ClaimApi['renewClaim']>[1], options?: CallOptions): Promise<ClaimView> {
    const call: Call = { op: 'renew', atMs: this.clock.now(), claimId, ...(options ? { options } : {}) };
    this.calls.push(call);
    const scripted = this.renewScript?.(call);
    if (scripted) return scripted;
    return (async () => {
      const claim = this.liveByToken(claimId, body.token);
      claim.leaseExpiresAt = this.expiresAt(body.leaseSeconds);
      return claim;
    })();
  }

  releaseClaim(claimId: string, body: Parameters<ClaimApi['releaseClaim']>[1], options?: CallOptions): Promise<ClaimView> {
    const call: Call = { op: 'release', atMs: this.clock.now(), claimId, ...(options ? { options } : {}) };
    this.calls.push(call);
    const scripted = this.releaseScript?.(call);
    if (scripted) return scripted;
    return (async () => {
      const claim = this.liveByToken(claimId, body.token);
      claim.state = 'RELEASED';
      return claim;
    })();
  }

  /** The lease ran out on the server: the next renew or release answers LEASE_LOST. */
  expire(claimId: string): void {
    this.claims.get(claimId)!.leaseExpiresAt = new Date(this.clock.now()).toISOString();
  }

  ops(): string[] {
    return this.calls.map((c) => c.op);
  }
}

/** A fn the test ends by hand, recording what withClaim handed it. */
function controlled() {
  let resolve!: (value: string) => void;
  let reject!: (error: unknown) => void;
  const done = new Promise<string>((res, rej) => ((resolve = res), (reject = rej)));
  const seen: { claim: HeldClaim | null } = { claim: null };
  const fn = (claim: HeldClaim): Promise<string> => {
    seen.claim = claim;
    return done;
  };
  return { fn, seen, resolve, reject };
}

function setup(overrides: Partial<ClaimOptions> = {}) {
  const clock = new ManualClock();
  const api = new FakeClaims(clock);
  const events: ClaimEvent[] = [];
  const options: ClaimOptions = { claimKey: 'repo/main/deploy', scopeId: randomUUID(), holder: 'deployer', holderSession: 'session-a', leaseSeconds: 30, clock, onEvent: (e) => events.push(e), ...overrides };
  return { clock, api, events, options };
}

/** Settles a promise into a value, so a test can advance the clock before awaiting it. */
const settle = <T>(promise: Promise<T>) => promise.then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error }));

describe('withClaim', () => {
  it('renews a third of the way into the lease, then releases when fn resolves, and never renews after', async () => {
    const { clock, api, options } = setup();
    const work = controlled();
    const result = settle(withClaim(api, options, work.fn));
    await clock.advance(35_000);
    expect(work.seen.claim).toMatchObject({ claimKey: 'repo/main/deploy', fencingToken: 1 });
    expect(work.seen.claim!.isHeld()).toBe(true);
    const start = Date.parse('2026-01-01T00:00:00.000Z');
    expect(api.calls.filter((c) => c.op === 'renew').map((c) => c.atMs - start)).toEqual([10_000, 20_000, 30_000]);

    work.resolve('done');
    expect(await result).toEqual({ ok: true, value: 'done' });
    expect(api.ops().at(-1)).toBe('release');
    expect(work.seen.claim!.signal.aborted).toBe(false);
    expect(work.seen.claim!.isHeld()).toBe(false);
    const callsAtEnd = api.calls.length;
    await clock.advance(120_000);
    expect(api.calls.length).toBe(callsAtEnd);
    expect(clock.pending).toBe(0);
  });

  it('hands fn the fencing token, growing with each new claim of the key', async () => {
    const { api, options } = setup();
    const first = await withClaim(api, options, async (claim) => claim.fencingToken);
    const second = await withClaim(api, { ...options, holderSession: 'session-b' }, async (claim) => claim.fencingToken);
    expect([first, second]).toEqual([1, 2]);
    expect(api.ops()).toEqual(['acquire', 'release', 'acquire', 'release']);
  });

  it('aborts fn on LEASE_LOST and throws ClaimLostError after fn settles, without releasing', async () => {
    const { clock, api, events, options } = setup();
    const work = controlled();
    const result = settle(withClaim(api, options, work.fn));
    await clock.advance(0);
    api.expire(work.seen.claim!.claimId);
    await clock.advance(10_000);
    const signal = work.seen.claim!.signal;
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(ClaimLostError);
    expect(signal.reason).toMatchObject({ reason: 'LEASE_LOST', fencingToken: 1 });
    expect(work.seen.claim!.isHeld()).toBe(false);

    // fn noticed and stopped; even had it resolved, withClaim reports the loss.
    work.resolve('wrote anyway');
    const outcome = await result;
    expect(outcome.ok).toBe(false);
    expect(!outcome.ok && outcome.error).toBeInstanceOf(ClaimLostError);
    expect(api.ops()).toEqual(['acquire', 'renew']);
    expect(events.map((e) => e.type)).toEqual(['acquired', 'lost']);
  });

  it('keeps fn\'s error as the cause when fn throws after the loss', async () => {
    const { clock, api, options } = setup();
    const work = controlled();
    const result = settle(withClaim(api, options, work.fn));
    await clock.advance(0);
    api.renewScript = () => Promise.reject(apiError('LEASE_LOST', 409));
    await clock.advance(10_000);
    const stopped = new Error('stopped writing');
    work.reject(stopped);
    const outcome = await result;
    expect(!outcome.ok && outcome.error).toBeInstanceOf(ClaimLostError);
    expect(!outcome.ok && (outcome.error as ClaimLostError).cause).toBe(stopped);
  });

  it('aborts fn when the lease runs out before a renew succeeds', async () => {
    const { clock, api, events, options } = setup();
    api.renewScript = () => Promise.reject(apiError('NETWORK', 0));
    const work = controlled();
    const result = settle(withClaim(api, options, work.fn));
    await clock.advance(29_999);
    expect(work.seen.claim!.signal.aborted).toBe(false);
    const renewsMs = api.calls.filter((c) => c.op === 'renew').map((c) => c.atMs - Date.parse('2026-01-01T00:00:00.000Z'));
    // At a third of the lease, then a third of what is left each time, never closer than 250 ms.
    expect(renewsMs.slice(0, 3).map(Math.round)).toEqual([10_000, 16_667, 21_111]);
    expect(renewsMs.every((ms) => ms < 30_000)).toBe(true);
    await clock.advance(1);
    expect(work.seen.claim!.signal.reason).toMatchObject({ name: 'ClaimLostError', reason: 'EXPIRED' });
    const renewsAtLoss = api.calls.length;
    work.resolve('late');
    const outcome = await result;
    expect(!outcome.ok && outcome.error).toMatchObject({ reason: 'EXPIRED' });
    expect(api.calls.length).toBe(renewsAtLoss);
    expect(events.at(-1)).toMatchObject({ type: 'lost', reason: 'EXPIRED' });
  });

  it('judges the deadline when fn settles, before the expiry watch wakes', async () => {
    const { api, options } = setup();
    const clock = options.clock as ManualClock;
    const error = await withClaim(api, options, async () => {
      // fn blocks the event loop past the lease (a long synchronous step): no timer fired.
      clock.jump(31_000);
      return 'late';
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'ClaimLostError', reason: 'EXPIRED' });
    expect(api.ops()).toEqual(['acquire']);
  });

  it('releases when fn throws, and rethrows fn\'s error', async () => {
    const { api, events, options } = setup();
    const boom = new Error('boom');
    await expect(withClaim(api, options, async () => Promise.reject(boom))).rejects.toBe(boom);
    expect(api.ops()).toEqual(['acquire', 'release']);
    expect(events.map((e) => e.type)).toEqual(['acquired', 'released']);
    // The key is free again.
    await expect(withClaim(api, { ...options, holderSession: 'other' }, async (claim) => claim.fencingToken)).resolves.toBe(2);
  });

  it('aborts a renew in flight before releasing, and sends no renew after the release', async () => {
    const { clock, api, options } = setup();
    let renewSignal: AbortSignal | undefined;
    api.renewScript = (call) =>
      new Promise<never>((_, reject) => {
        renewSignal = call.options?.signal;
        renewSignal?.addEventListener('abort', () => reject(renewSignal!.reason), { once: true });
      });
    const work = controlled();
    const result = settle(withClaim(api, options, work.fn));
    await clock.advance(10_000);
    expect(api.ops()).toEqual(['acquire', 'renew']);
    work.resolve('done');
    expect(await result).toEqual({ ok: true, value: 'done' });
    expect(renewSignal?.aborted).toBe(true);
    expect(api.ops()).toEqual(['acquire', 'renew', 'release']);
    await clock.advance(60_000);
    expect(api.ops()).toEqual(['acquire', 'renew', 'release']);
  });

  it('throws ClaimHeldError with the holder and lease while another holds the key', async () => {
    const { clock, api, options } = setup();
    const first = controlled();
    const holding = settle(withClaim(api, options, first.fn));
    await clock.advance(0);
    const error = await withClaim(api, { ...options, holder: 'intruder', holderSession: 'session-b' }, async () => 'never').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClaimHeldError);
    expect(error).toMatchObject({ code: 'CLAIM_HELD', claimKey: 'repo/main/deploy', holder: 'deployer', leaseExpiresAt: '2026-01-01T00:00:30.000Z', waitedMs: 0 });
    expect((error as ClaimHeldError).cause).toMatchObject({ code: 'CLAIM_HELD', status: 409 });
    first.resolve('ok');
    await holding;
  });

  it('reads the holder and lease from the older list form of details too (a replay of a reply stored before the object form)', () => {
    const listed = new BatonApiError({ code: 'CLAIM_HELD', status: 409, message: 'held', requestId: 'r', details: [{ path: 'holder', message: 'deployer' }, { path: 'leaseExpiresAt', message: '2026-01-01T00:00:30.000Z' }] });
    expect(claimHeldErrorOf('k', listed, 0)).toMatchObject({ holder: 'deployer', leaseExpiresAt: '2026-01-01T00:00:30.000Z' });
  });

  it('waits for the key up to waitMs, polling at most every pollMs', async () => {
    const { clock, api, events, options } = setup();
    const first = controlled();
    const holding = settle(withClaim(api, options, first.fn));
    await clock.advance(0);
    const second = settle(withClaim(api, { ...options, holder: 'next', holderSession: 'session-b', waitMs: 10_000, pollMs: 2_000 }, async (claim) => claim.fencingToken));
    await clock.advance(3_000);
    first.resolve('ok');
    await holding;
    await clock.advance(2_000);
    expect(await second).toEqual({ ok: true, value: 2 });
    const acquires = api.calls.filter((c) => c.op === 'acquire').map((c) => c.atMs - Date.parse('2026-01-01T00:00:00.000Z'));
    expect(acquires).toEqual([0, 0, 2_000, 4_000]);
    expect(events.filter((e) => e.type === 'held_elsewhere')).toHaveLength(2);
  });

  it('gives up waiting at waitMs with the last ClaimHeldError', async () => {
    const { clock, api, options } = setup();
    const first = controlled();
    const holding = settle(withClaim(api, options, first.fn));
    await clock.advance(0);
    const second = settle(withClaim(api, { ...options, holderSession: 'session-b', waitMs: 3_000, pollMs: 2_000 }, async () => 'never'));
    await clock.advance(5_000);
    const outcome = await second;
    expect(!outcome.ok && outcome.error).toMatchObject({ name: 'ClaimHeldError', waitedMs: 3_000 });
    first.resolve('ok');
    await holding;
  });

  it('aborts fn on the caller\'s signal and still releases', async () => {
    const { clock, api, options } = setup();
    const caller = new AbortController();
    const work = controlled();
    const result = settle(withClaim(api, { ...options, signal: caller.signal }, work.fn));
    await clock.advance(0);
    caller.abort(new Error('shutting down'));
    expect(work.seen.claim!.signal.reason).toMatchObject({ message: 'shutting down' });
    work.reject(work.seen.claim!.signal.reason);
    const outcome = await result;
    expect(!outcome.ok && outcome.error).toMatchObject({ message: 'shutting down' });
    expect(api.ops()).toEqual(['acquire', 'release']);
  });

  it('reports a release answered LEASE_LOST after fn succeeded as ClaimLostError', async () => {
    const { api, options } = setup();
    api.releaseScript = () => Promise.reject(apiError('LEASE_LOST', 409));
    await expect(withClaim(api, options, async () => 'done')).rejects.toMatchObject({ name: 'ClaimLostError', reason: 'LEASE_LOST' });
  });

  it('swallows a release that failed otherwise: the lease frees the key', async () => {
    const { api, events, options } = setup();
    api.releaseScript = () => Promise.reject(apiError('NETWORK', 0));
    await expect(withClaim(api, options, async () => 'done')).resolves.toBe('done');
    expect(events.at(-1)).toMatchObject({ type: 'release_failed' });
  });

  it('refuses a leaseSeconds the server would refuse, before any call', async () => {
    const { api, options } = setup();
    await expect(withClaim(api, { ...options, leaseSeconds: 4 }, async () => 'x')).rejects.toBeInstanceOf(RangeError);
    await expect(withClaim(api, { ...options, leaseSeconds: 30.5 }, async () => 'x')).rejects.toBeInstanceOf(RangeError);
    expect(api.calls).toEqual([]);
    await flush();
  });
});
