import { assert } from '../assert';
import { conflict } from '../errors';
import { maxBarrierTarget, type Barrier } from './model';

/**
 * Barrier moves as pure functions over stored state. Each returns the next state and checks
 * the invariants, so a broken count is a bug in Baton that fails loudly instead of committing.
 * That no arrivalKey counts twice is kept by the caller asking `alreadyCounted` under the
 * barrier's row lock, and made impossible by the arrivals' unique key.
 */
export function assertBarrier(b: Barrier): void {
  assert(Number.isSafeInteger(b.target) && b.target >= 1 && b.target <= maxBarrierTarget, `barrier ${b.id}: target ${b.target} out of range`);
  assert(Number.isSafeInteger(b.epoch) && b.epoch >= 1, `barrier ${b.id}: epoch ${b.epoch} is not a positive integer`);
  assert(Number.isSafeInteger(b.arrivals) && b.arrivals >= 0 && b.arrivals <= b.target, `barrier ${b.id}: ${b.arrivals} arrivals with target ${b.target}`);
  // Reaching the target releases in the same transaction, so neither WAITING nor CANCELLED can hold a full count.
  assert((b.state === 'RELEASED') === (b.arrivals === b.target), `barrier ${b.id}: ${b.state} with ${b.arrivals} of ${b.target} arrived in epoch ${b.epoch}`);
  assert((b.state === 'RELEASED') === (b.releasedAt !== null), `barrier ${b.id}: ${b.state} with releasedAt ${b.releasedAt}`);
}

export function newBarrier(fields: Pick<Barrier, 'id' | 'spaceId' | 'scopeId' | 'target'>, nowMs: number): Barrier {
  const barrier: Barrier = { ...fields, epoch: 1, state: 'WAITING', arrivals: 0, releasedAt: null, createdAt: nowMs, updatedAt: nowMs };
  assertBarrier(barrier);
  return barrier;
}

export type ArrivalDecision = { kind: 'replay' } | { kind: 'counted'; barrier: Barrier; released: boolean };

/**
 * Decides one arrive. `alreadyCounted` says whether the arrivalKey was counted in `epoch` (the
 * epoch the caller names; the current one when it names none). A counted key replays, also
 * after the epoch was released or cancelled: a retry must not fail for having succeeded. A new
 * key counts only in the current epoch, and only while it is WAITING; the arrival that reaches
 * the target releases the barrier.
 */
export function decideArrival(b: Barrier, alreadyCounted: boolean, epoch: number | undefined, nowMs: number): ArrivalDecision {
  if (alreadyCounted) return { kind: 'replay' };
  if (epoch !== undefined && epoch !== b.epoch) throw conflict(`barrier ${b.id} is in epoch ${b.epoch}, not ${epoch}`);
  if (b.state !== 'WAITING') throw conflict(`barrier ${b.id} is ${b.state} (epoch ${b.epoch}); a new arrivalKey counts only while it is WAITING`);
  const arrivals = b.arrivals + 1;
  const released = arrivals === b.target;
  const barrier: Barrier = { ...b, arrivals, state: released ? 'RELEASED' : 'WAITING', releasedAt: released ? nowMs : null, updatedAt: nowMs };
  assertBarrier(barrier);
  return { kind: 'counted', barrier, released };
}

/**
 * Starts the next epoch: arrivals reset, WAITING again. `epoch` is the epoch the caller means
 * to end; when that epoch is already over (an earlier call or another caller advanced it) the
 * result is undefined, nothing changes, and the caller answers with the current view. That
 * makes a retried or concurrent nextEpoch safe: it can never skip an epoch.
 */
export function advanceEpoch(b: Barrier, epoch: number | undefined, nowMs: number): Barrier | undefined {
  if (epoch !== undefined && epoch < b.epoch) return undefined;
  if (epoch !== undefined && epoch > b.epoch) throw conflict(`barrier ${b.id} is in epoch ${b.epoch}, not ${epoch}`);
  if (b.state === 'WAITING') {
    throw conflict(`barrier ${b.id} is WAITING (epoch ${b.epoch}, ${b.arrivals} of ${b.target} arrived); only a RELEASED or CANCELLED barrier moves to its next epoch`);
  }
  const barrier: Barrier = { ...b, epoch: b.epoch + 1, arrivals: 0, state: 'WAITING', releasedAt: null, updatedAt: nowMs };
  assertBarrier(barrier);
  return barrier;
}

/**
 * Cancels the current epoch of a WAITING barrier. Undefined for an already CANCELLED one: a
 * repeat changes nothing. A RELEASED epoch has happened and cannot be taken back.
 */
export function cancelBarrier(b: Barrier, nowMs: number): Barrier | undefined {
  if (b.state === 'CANCELLED') return undefined;
  if (b.state === 'RELEASED') throw conflict(`barrier ${b.id} is RELEASED (epoch ${b.epoch}); call nextEpoch to reuse it`);
  const barrier: Barrier = { ...b, state: 'CANCELLED', updatedAt: nowMs };
  assertBarrier(barrier);
  return barrier;
}

/**
 * Whether a long poll keeps waiting: the epoch it waits on (the current one when it names
 * none) is still WAITING. Naming an epoch that is not the current one returns at once, so a
 * waiter that missed a release followed by nextEpoch is not held through the next epoch.
 */
export function stillWaiting(b: Pick<Barrier, 'state' | 'epoch'>, epoch: number | undefined): boolean {
  return b.state === 'WAITING' && (epoch === undefined || epoch === b.epoch);
}
