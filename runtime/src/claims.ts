import { randomUUID } from 'node:crypto';
import type { claimLeaseBounds } from '@baton/core';
import type { ApiErrorShape, ClaimApi, ClaimGrant } from './contract';
import { systemClock, type RuntimeClock } from './clock';
import { LeaseKeeper, type RenewAnswer } from './lease-keeper';

/**
 * Claims from the holder's side (docs/design/0020-claims.md; docs/api.md "Claims"): hold a key exclusively
 * while a piece of work runs, with the lease renewed underneath it and the fencing token handed
 * to the work. Built on ClaimApi alone (contract.ts), so it runs against the client, the
 * simulator or an in-memory fake.
 *
 * A lock alone cannot stop a holder that paused past its lease from writing late; the fencing
 * token can, when the store the claim guards refuses a write with a lower token than the
 * highest it has seen. withClaim cannot do that part: it can only tell `fn` (its signal) that
 * the claim is gone, and throw ClaimLostError afterwards.
 */

type CoreLeaseBounds = typeof claimLeaseBounds;
/**
 * The server's bounds on leaseSeconds and its default. The runtime takes only types from core,
 * so the values are repeated; the annotation makes the compiler hold them equal to core's.
 */
export const claimLeaseSecondsBounds: { readonly min: CoreLeaseBounds['minSeconds']; readonly max: CoreLeaseBounds['maxSeconds']; readonly default: CoreLeaseBounds['defaultSeconds'] } = {
  min: 5,
  max: 600,
  default: 30,
};
/** The default wait between acquire tries while another holds the key (`waitMs` > 0). */
export const defaultClaimPollMs = 1_000;
/** The shortest wait between acquire tries: a lease about to run out is not polled in a busy loop. */
const minClaimPollMs = 50;

export interface ClaimOptions {
  claimKey: string;
  scopeId: string;
  /** The stable logical worker name. */
  holder: string;
  /**
   * This client instance. Default: a fresh UUID per withClaim call. Passing the session of a
   * claim still held (a restarted call that lost the reply) gets that claim back; keep it secret.
   */
  holderSession?: string;
  /** Asked for on acquire and on every renew, 5 to 600 (default 30); the server may shorten it. */
  leaseSeconds?: number;
  /**
   * How long to keep trying while someone else holds the key (409 CLAIM_HELD). Default 0: throw
   * ClaimHeldError at once. Past it, the last ClaimHeldError is thrown.
   */
  waitMs?: number;
  /** The longest pause between tries while waiting; a lease that runs out sooner is tried then. Default 1,000. */
  pollMs?: number;
  /** Aborts the acquire and the wait; while `fn` runs it aborts `fn`'s signal with this reason (the claim is still released). */
  signal?: AbortSignal;
  /** Drives the renew cadence, the lease deadline and the acquire wait. Default: the system clock. */
  clock?: RuntimeClock;
  /** What happened to the claim, for logs and metrics. */
  onEvent?: (event: ClaimEvent) => void;
}

export type ClaimEvent =
  | { type: 'acquired'; claimId: string; fencingToken: number; leaseExpiresAt: string }
  | { type: 'held_elsewhere'; holder: string | null; leaseExpiresAt: string | null; retryInMs: number | null }
  | { type: 'renewed'; claimId: string; leaseExpiresAt: string }
  | { type: 'renew_failed'; claimId: string; error: unknown; retryInMs: number }
  | { type: 'lost'; claimId: string; reason: ClaimLostReason }
  | { type: 'released'; claimId: string }
  | { type: 'release_failed'; claimId: string; error: unknown };

/** What `fn` gets while it holds the claim. */
export interface HeldClaim {
  claimId: string;
  claimKey: string;
  /** Send it with every write to what the claim guards; that store refuses a lower one than it has seen. */
  fencingToken: number;
  /** Aborted with a ClaimLostError when the claim is lost, or with the caller's reason on `options.signal`: stop writing. */
  signal: AbortSignal;
  /** Whether the claim is held by the local deadline (conservative: before the server's). Ask before a write that cannot carry the fencing token. */
  isHeld(): boolean;
}

/** 409 CLAIM_HELD: someone else holds the key with a live lease. */
export class ClaimHeldError extends Error {
  override name = 'ClaimHeldError';
  readonly code = 'CLAIM_HELD';
  constructor(
    readonly claimKey: string,
    /** The holder named in the error's details; null when the reply did not name one. */
    readonly holder: string | null,
    /** When the live lease runs out on the server's clock (ISO 8601); null when not named. */
    readonly leaseExpiresAt: string | null,
    /** The reply's details as sent: `{holder, leaseExpiresAt}`. */
    readonly details: unknown,
    /** How long withClaim waited before giving up (0 without `waitMs`). */
    readonly waitedMs: number,
    cause: unknown,
  ) {
    super(`claim ${claimKey} is held by ${holder ?? 'another holder'}${leaseExpiresAt ? ` until ${leaseExpiresAt}` : ''}`, { cause });
  }
}

/** LEASE_LOST: the server refused the token (renew or release); EXPIRED: the local deadline passed before a renew succeeded. */
export type ClaimLostReason = 'LEASE_LOST' | 'EXPIRED';

/**
 * The claim ended while `fn` held it: its writes since may race a newer holder's, which the
 * fencing token (not this error) keeps out of the guarded store. Thrown by withClaim after `fn`
 * settles, whatever `fn` did; `cause` is `fn`'s error when it threw.
 */
export class ClaimLostError extends Error {
  override name = 'ClaimLostError';
  constructor(
    readonly claimKey: string,
    readonly claimId: string,
    readonly fencingToken: number,
    readonly reason: ClaimLostReason,
  ) {
    super(`claim ${claimKey} (fencing token ${fencingToken}) was lost: ${reason}`);
  }
}

/**
 * Acquires `claimKey`, runs `fn` while renewing the lease a third of the way into it, and
 * releases the claim when `fn` settles (resolved or thrown). When a renew answers LEASE_LOST, or
 * the lease's local deadline passes before a renew succeeds, `fn`'s signal is aborted at once and
 * withClaim throws ClaimLostError once `fn` settles (a lost claim is not released: it is no longer
 * ours). No renew starts after `fn` settles; one in flight is aborted before the release is sent.
 *
 * Throws ClaimHeldError when the key stays held past `waitMs`, and the client's error for any
 * other failure to acquire. A release that fails for another reason than LEASE_LOST is reported
 * as a 'release_failed' event only: the work is done, and the lease frees the key when it runs out.
 */
export async function withClaim<T>(client: ClaimApi, options: ClaimOptions, fn: (claim: HeldClaim) => Promise<T>): Promise<T> {
  const clock = options.clock ?? systemClock;
  const leaseSeconds = options.leaseSeconds ?? claimLeaseSecondsBounds.default;
  assertClaimOptions(options, leaseSeconds);
  const emit = quietly(options.onEvent);
  const { grant, sentAtMs } = await acquire(client, options, leaseSeconds, clock, emit);
  emit({ type: 'acquired', claimId: grant.id, fencingToken: grant.fencingToken, leaseExpiresAt: grant.leaseExpiresAt });
  const lease = new Lease(client, grant, leaseSeconds, clock, sentAtMs, emit);
  return lease.run(fn, options.signal);
}

type Emit = (event: ClaimEvent) => void;

/** An observer that throws must not break the renewer or skip the release. */
function quietly(onEvent: Emit | undefined): Emit {
  return (event) => {
    try {
      onEvent?.(event);
    } catch {
      // the observer's own failure
    }
  };
}

function assertClaimOptions(options: ClaimOptions, leaseSeconds: number): void {
  const { min, max } = claimLeaseSecondsBounds;
  if (!Number.isInteger(leaseSeconds) || leaseSeconds < min || leaseSeconds > max) throw new RangeError(`leaseSeconds must be an integer from ${min} to ${max}, got ${leaseSeconds}`);
  if (options.waitMs !== undefined && !(options.waitMs >= 0)) throw new RangeError(`waitMs must be 0 or more, got ${options.waitMs}`);
  if (options.pollMs !== undefined && !(options.pollMs > 0)) throw new RangeError(`pollMs must be positive, got ${options.pollMs}`);
}

/** A server reply's code, from the client's BatonApiError or a fake's plain shape alike. */
function codeOf(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null ? (error as Partial<ApiErrorShape>).code : undefined;
}

/**
 * The holder and leaseExpiresAt a CLAIM_HELD reply names in its details: the object
 * `{holder, leaseExpiresAt}` (docs/design/0020-claims.md), or the `[{path, message}]` list servers sent before
 * it, which a replay of a reply stored then still carries.
 */
export function claimHeldErrorOf(claimKey: string, error: unknown, waitedMs: number): ClaimHeldError {
  const details = (error as Partial<ApiErrorShape>).details;
  const named = (field: 'holder' | 'leaseExpiresAt'): string | null => {
    const value: unknown = Array.isArray(details)
      ? (details.find((d: unknown) => (d as { path?: unknown } | null)?.path === field) as { message?: unknown } | undefined)?.message
      : (details as Record<string, unknown> | null | undefined)?.[field];
    return typeof value === 'string' ? value : null;
  };
  return new ClaimHeldError(claimKey, named('holder'), named('leaseExpiresAt'), details, waitedMs, error);
}

/**
 * POST /claims until granted, or until `waitMs` runs out while another holds the key. Every try
 * is a new logical call (a new Idempotency-Key): a CLAIM_HELD reply is stored under its key, so
 * repeating the key would only replay it.
 */
async function acquire(client: ClaimApi, options: ClaimOptions, leaseSeconds: number, clock: RuntimeClock, emit: Emit): Promise<{ grant: ClaimGrant; sentAtMs: number }> {
  const { claimKey, scopeId, holder, signal } = options;
  const holderSession = options.holderSession ?? randomUUID();
  const waitMs = options.waitMs ?? 0;
  const pollMs = options.pollMs ?? defaultClaimPollMs;
  const startMs = clock.now();
  for (;;) {
    const sentAtMs = clock.now();
    try {
      const grant = await client.acquireClaim({ claimKey, scopeId, holder, holderSession, leaseSeconds }, signal ? { signal } : {});
      if (grant.state !== 'HELD' || !grant.token) throw new Error(`POST /claims answered a claim that is not held (${grant.state})`);
      return { grant, sentAtMs };
    } catch (error) {
      if (codeOf(error) !== 'CLAIM_HELD') throw error;
      const held = claimHeldErrorOf(claimKey, error, clock.now() - startMs);
      const leftMs = startMs + waitMs - clock.now();
      const retryInMs = leftMs > 0 ? Math.min(leftMs, pollDelayMs(held.leaseExpiresAt, clock.now(), pollMs)) : null;
      emit({ type: 'held_elsewhere', holder: held.holder, leaseExpiresAt: held.leaseExpiresAt, retryInMs });
      if (retryInMs === null) throw held;
      await clock.sleep(retryInMs, signal);
      signal?.throwIfAborted(); // a clock whose sleep resolves on abort
    }
  }
}

/** Poll at most every `pollMs` (a release frees the key at once), sooner when the live lease runs out before. */
function pollDelayMs(leaseExpiresAt: string | null, nowMs: number, pollMs: number): number {
  const expiresAtMs = leaseExpiresAt === null ? Number.NaN : Date.parse(leaseExpiresAt);
  if (Number.isNaN(expiresAtMs)) return pollMs;
  return Math.min(pollMs, Math.max(minClaimPollMs, expiresAtMs - nowMs));
}

type LeaseState =
  /** fn runs and the lease is renewed. */
  | 'held'
  /** LEASE_LOST or the local deadline passed: nothing more is sent. */
  | 'lost'
  /** fn settled: the renewer is stopped, then the claim released. */
  | 'ending';

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** One held claim: its lease keeper (renewals and the deadline watch), fn's signal and the release. */
class Lease {
  private state: LeaseState = 'held';
  private readonly keeper: LeaseKeeper;
  /** fn's signal: aborted on loss or on the caller's abort. */
  private readonly fnAbort = new AbortController();
  private lost: ClaimLostError | null = null;

  constructor(
    private readonly client: ClaimApi,
    private readonly grant: ClaimGrant,
    leaseSeconds: number,
    clock: RuntimeClock,
    sentAtMs: number,
    private readonly emit: Emit,
  ) {
    this.keeper = new LeaseKeeper(
      {
        clock,
        leaseSeconds,
        renew: (signal) => this.renew(leaseSeconds, signal),
        onRenewed: (leaseExpiresAt) => this.emit({ type: 'renewed', claimId: grant.id, leaseExpiresAt }),
        onRenewFailed: (error, retryInMs) => this.emit({ type: 'renew_failed', claimId: grant.id, error, retryInMs }),
        onLost: (reason) => this.lose(reason),
      },
      // The acquire was answered at once (CLAIM_HELD is a reply, not a wait), so its send bounds the grant.
      { leaseExpiresAt: grant.leaseExpiresAt, countFromMs: sentAtMs },
    );
  }

  async run<T>(fn: (claim: HeldClaim) => Promise<T>, callerSignal: AbortSignal | undefined): Promise<T> {
    const onCallerAbort = (): void => this.fnAbort.abort(callerSignal!.reason);
    if (callerSignal?.aborted) onCallerAbort();
    else callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
    const kept = this.keeper.keep();
    let outcome: Settled<T>;
    try {
      outcome = { ok: true, value: await fn(this.held()) };
    } catch (error) {
      outcome = { ok: false, error };
    }
    callerSignal?.removeEventListener('abort', onCallerAbort);
    // fn may have run past the deadline while the deadline watch had not yet woken: judge now.
    if (this.state === 'held' && !this.keeper.beforeDeadline()) this.lose('EXPIRED');
    if (this.state === 'held') this.state = 'ending';
    this.keeper.stop();
    // Never renew after release: the keeper's loops have returned before the release leaves.
    await kept;
    if (this.state === 'ending') await this.release(outcome.ok);
    if (this.lost) {
      if (!outcome.ok) this.lost.cause = outcome.error; // fn most likely threw because its signal aborted
      throw this.lost;
    }
    if (!outcome.ok) throw outcome.error;
    return outcome.value;
  }

  private held(): HeldClaim {
    return {
      claimId: this.grant.id,
      claimKey: this.grant.claimKey,
      fencingToken: this.grant.fencingToken,
      signal: this.fnAbort.signal,
      isHeld: () => this.state === 'held' && this.keeper.beforeDeadline(),
    };
  }

  private async renew(leaseSeconds: number, signal: AbortSignal): Promise<RenewAnswer> {
    try {
      const { leaseExpiresAt } = await this.client.renewClaim(this.grant.id, { token: this.grant.token, leaseSeconds }, { signal });
      return { ok: true, leaseExpiresAt };
    } catch (error) {
      return { ok: false, leaseLost: codeOf(error) === 'LEASE_LOST', error };
    }
  }

  private lose(reason: ClaimLostReason): void {
    if (this.state === 'lost') return;
    this.state = 'lost';
    this.lost = new ClaimLostError(this.grant.claimKey, this.grant.id, this.grant.fencingToken, reason);
    this.keeper.stop();
    this.fnAbort.abort(this.lost);
    this.emit({ type: 'lost', claimId: this.grant.id, reason });
  }

  /**
   * Not under the caller's signal: an aborted caller still frees the key. LEASE_LOST here means
   * the server ended the claim before fn did (its clock ran ahead of ours), so a fn that
   * succeeded is told through ClaimLostError; after a fn that threw, its error is what matters.
   */
  private async release(fnSucceeded: boolean): Promise<void> {
    try {
      await this.client.releaseClaim(this.grant.id, { token: this.grant.token });
      this.emit({ type: 'released', claimId: this.grant.id });
    } catch (error) {
      this.emit({ type: 'release_failed', claimId: this.grant.id, error });
      if (codeOf(error) === 'LEASE_LOST' && fnSucceeded) this.lose('LEASE_LOST');
    }
  }
}
